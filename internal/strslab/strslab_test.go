package strslab

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

func TestStringsOutliveTheirBuffer(t *testing.T) {
	s := New(2)
	buf := []byte("default")
	a, b := s.Intern(buf), s.Intern(buf)
	assert.Same(t, unsafe.StringData(a), unsafe.StringData(b), "one shared copy")
	c := s.Copy(buf)
	buf[0] = 'X'
	assert.Equal(t, "default", a, "copied out of the buffer")
	assert.Equal(t, "default", c)

	s.Intern([]byte("one"))
	s.Intern([]byte("two")) // past the limit: copied, not remembered
	assert.NotSame(t, unsafe.StringData(s.Intern([]byte("two"))), unsafe.StringData(s.Intern([]byte("two"))))
	assert.Equal(t, "", s.Copy(nil))
}
