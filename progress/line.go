package progress

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/restoregraph/restoregraph/restore"
)

// Line shows a restore's progress: a live bar on a terminal, a plain line every few
// seconds otherwise, with how many objects are done, running and failed, the rate and
// what is left, how long the client's rate limiter held requests back, and since when
// the API server has not answered. Events arrive from one goroutine (the restore's
// RunOptions.OnEvent).
type Line struct {
	w        io.Writer
	tty      bool
	total    int
	start    time.Time
	mu       sync.Mutex
	done     int
	running  int
	failed   int
	lastDraw time.Time
	// Throttle, when set, says how long requests have waited for the client's rate
	// limiter (Limiter.Waited); the line shows the share of the last interval they spent
	// waiting. Set it before the first event.
	Throttle   func() time.Duration
	lastWaited time.Duration
	// Reach, when set, says whether the API server answers. Set it before the first
	// event.
	Reach *Reachability
	// stop ends the ticker that draws the line when no event comes (all waiting or
	// retrying); stopped is closed when it has.
	stop, stopped chan struct{}
}

// NewLine starts drawing the progress of a restore of total objects on w; Finish ends
// it.
func NewLine(w io.Writer, total int) *Line {
	p := &Line{w: w, total: total, start: time.Now(), stop: make(chan struct{}), stopped: make(chan struct{})}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	go p.tick()
	return p
}

// interval is how often the line is drawn.
func (p *Line) interval() time.Duration {
	if p.tty {
		return 100 * time.Millisecond
	}
	return 2 * time.Second
}

// tick draws the line when events have not for an interval: while the server is away,
// no object ends, and the line must still say what the restore is doing.
func (p *Line) tick() {
	defer close(p.stopped)
	t := time.NewTicker(p.interval())
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		if time.Since(p.lastDraw) >= p.interval() {
			p.draw(false)
		}
		p.mu.Unlock()
	}
}

// Event counts ev, and draws the line when an interval has passed since it was last
// drawn.
func (p *Line) Event(ev restore.Event) {
	if ev.Item == nil {
		return // barriers
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Type {
	case restore.EventStarted, restore.EventResumed:
		p.running++
	case restore.EventWaiting:
		p.running--
	case restore.EventSucceeded:
		p.running--
		p.done++
	case restore.EventFailed:
		p.running--
		p.done++
		p.failed++
	case restore.EventSkipped, restore.EventCancelled:
		p.done++
	}
	if time.Since(p.lastDraw) >= p.interval() {
		p.draw(false)
	}
}

func (p *Line) draw(final bool) {
	window := time.Since(p.lastDraw)
	if p.lastDraw.IsZero() {
		window = time.Since(p.start)
	}
	p.lastDraw = time.Now()
	elapsed := time.Since(p.start)
	rate := float64(p.done) / elapsed.Seconds()
	eta := "?"
	if rate > 0 {
		eta = time.Duration(float64(p.total-p.done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	line := fmt.Sprintf("%d/%d done, %d running, %d failed, %.0f/s, ETA %s", p.done, p.total, p.running, p.failed, rate, eta)
	if p.Throttle != nil {
		waited := p.Throttle()
		if w := (waited - p.lastWaited).Round(time.Millisecond); w > 0 {
			line += fmt.Sprintf(", client-side throttling: requests waited %s in the last %s (raise --client-qps)",
				w, window.Round(100*time.Millisecond))
		}
		p.lastWaited = waited
	}
	if p.Reach != nil {
		if since, last, down := p.Reach.Down(); down {
			line += fmt.Sprintf(", the API server has not answered for %s (%s): retrying within --item-timeout",
				time.Since(since).Round(time.Second), failureCause(last))
		}
	}
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	const width = 30
	filled := 0
	if p.total > 0 {
		filled = width * p.done / p.total
	}
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = '.'
		if i < filled {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(p.w, "\r[%s] %s\033[K", bar, line)
	if final {
		fmt.Fprintln(p.w)
	}
}

// Finish stops drawing, and draws the line a last time.
func (p *Line) Finish() {
	close(p.stop)
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(true)
}

// failureCause is the innermost words of a connection failure: "connection refused",
// not the request's URL and the dial's addresses, which the line has no room for.
func failureCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
