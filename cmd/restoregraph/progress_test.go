package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, total: 300, done: 100, running: 4, failed: 1, start: time.Now().Add(-10 * time.Second)}
	p.draw(false)
	line := strings.TrimSpace(buf.String())
	// 100 done in 10 s is 10/s; 200 to go takes 20 s.
	assert.Equal(t, "100/300 done, 4 running, 1 failed, 10/s, ETA 20s", line)
}
