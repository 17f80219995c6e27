package progress

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/restoregraph/restoregraph/archive"
)

// Meter is an archive.Source that counts the bytes read from the source it wraps, to
// show them as they arrive (Show).
type Meter struct {
	Source archive.Source
	read   atomic.Int64
	size   atomic.Int64
}

// Open opens key of the source, counting what is read of it.
func (m *Meter) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	rc, err := m.Source.Open(ctx, key, offset)
	if err != nil {
		return nil, err
	}
	if s, ok := rc.(archive.Sized); ok {
		m.size.Store(s.Size())
	}
	return &meteredReader{ReadCloser: rc, m: m, sized: rc}, nil
}

type meteredReader struct {
	io.ReadCloser
	m     *Meter
	sized io.ReadCloser
}

func (r *meteredReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.m.read.Add(int64(n))
	return n, err
}

// Size passes the source's Size on, so that a connection that ends early is still told.
func (r *meteredReader) Size() int64 {
	if s, ok := r.sized.(archive.Sized); ok {
		return s.Size()
	}
	return -1
}

// Show draws a line of bytes read and rate on w while the backup is read, when w is a
// terminal; stop erases it.
func (m *Meter) Show(w io.Writer, name string) (stop func()) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
				read, size := m.read.Load(), m.size.Load()
				rate := float64(read) / time.Since(start).Seconds()
				of := ""
				if size > 0 {
					of = fmt.Sprintf(" of %s (%d%%)", mib(size), 100*read/size)
				}
				fmt.Fprintf(w, "\rreading %s: %s%s, %s/s\033[K", name, mib(read), of, mib(int64(rate)))
			}
		}
	}()
	return func() { close(done); <-finished }
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// ReportRead writes to w what reading backup b from its store took: the bytes read of
// the tarball (a plan of a backup that carries its manifest stops early), and how often
// the read was resumed where the download broke.
func ReportRead(w io.Writer, name string, b *archive.Backup) {
	st := b.SourceStats()
	of := ""
	if st.Size > 0 {
		of = fmt.Sprintf(" of %d (%d%%)", st.Size, 100*st.Bytes/st.Size)
	}
	resumed := ""
	switch st.Resumed {
	case 0:
	case 1:
		resumed = ", resumed 1 time where the download broke"
	default:
		resumed = fmt.Sprintf(", resumed %d times where the download broke", st.Resumed)
	}
	fmt.Fprintf(w, "read %s: %d bytes%s%s\n", name, st.Bytes, of, resumed)
}
