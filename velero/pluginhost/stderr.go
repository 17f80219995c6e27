package pluginhost

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// quietLog is a plugin's standard error as the host passes it on: line by line, but for
// go-plugin's own JSON records below Info ({"@level":"debug","@message":"plugin
// address",...}), which every plugin process writes as it starts and which say
// nothing to whoever reads the host's log.
type quietLog struct {
	mu   sync.Mutex
	to   io.Writer
	line []byte
}

func (q *quietLog) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.line = append(q.line, p...)
	for {
		i := bytes.IndexByte(q.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := q.line[:i+1]
		if !belowInfo(line) {
			if _, err := q.to.Write(line); err != nil {
				return len(p), err
			}
		}
		q.line = q.line[i+1:]
	}
}

// belowInfo reports whether line is an hclog JSON record at trace or debug level.
func belowInfo(line []byte) bool {
	if !bytes.HasPrefix(line, []byte(`{"@`)) {
		return false
	}
	var rec struct {
		Level string `json:"@level"`
	}
	return json.Unmarshal(line, &rec) == nil && (rec.Level == "debug" || rec.Level == "trace")
}
