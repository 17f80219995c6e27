package scheduler

import (
	"sync"
	"time"
)

// EventType says what happened to a node.
type EventType string

const (
	Started        EventType = "Started"
	Waiting        EventType = "Waiting" // in Await; the node gave up its worker slot
	Resumed        EventType = "Resumed" // back from Await with a slot
	SucceededEvent EventType = "Succeeded"
	FailedEvent    EventType = "Failed"
	SkippedEvent   EventType = "Skipped"
	CancelledEvent EventType = "Cancelled"
)

// Event is one thing that happened to a node.
type Event struct {
	Type    EventType
	Node    int64
	Time    time.Time
	Worker  int
	Err     error   // for Failed, Skipped and Cancelled
	Awaited []int64 // for Waiting
}

// eventQueue hands events from the workers to one delivering goroutine. Pushing never
// waits for the consumer: the queue grows instead.
type eventQueue struct {
	mu     sync.Mutex
	cond   sync.Cond
	buf    []Event
	closed bool
	done   chan struct{}
}

func newEventQueue() *eventQueue {
	q := &eventQueue{done: make(chan struct{})}
	q.cond.L = &q.mu
	return q
}

func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	q.buf = append(q.buf, ev)
	q.mu.Unlock()
	q.cond.Signal()
}

// deliver calls sink with every event, in order, until the queue is closed and empty.
func (q *eventQueue) deliver(sink func(Event)) {
	defer close(q.done)
	var batch []Event
	for {
		q.mu.Lock()
		for len(q.buf) == 0 && !q.closed {
			q.cond.Wait()
		}
		batch, q.buf = q.buf, batch[:0]
		closed := q.closed
		q.mu.Unlock()
		for _, ev := range batch {
			sink(ev)
		}
		if closed && len(batch) == 0 {
			return
		}
	}
}

// close ends delivery once every pushed event is delivered, and waits for it.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Signal()
	<-q.done
}
