package restore

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// journalRecord is one line of the journal: an object restored, by its UIDs, how, and
// the plugins' operations on it.
type journalRecord struct {
	Source     types.UID   `json:"source"`
	New        types.UID   `json:"new"`
	Status     Status      `json:"status,omitempty"` // Restored when empty
	Operations []Operation `json:"operations,omitempty"`
	HooksRan   bool        `json:"hooksRan,omitempty"`
}

// Journaled is what the journal says of an object: its UID in the target, whether it
// was restored, adopted or updated, and the asynchronous operations plugins started on
// it, as they last stood. An object is recorded again when its operations end; the last
// record of it holds.
type Journaled struct {
	New        types.UID
	Status     Status
	Operations []Operation
	// HooksRan: a Pod's exec hooks ran (a resumed restore does not run them again).
	HooksRan bool
}

// Journal is where a restore records how each object ended, so that a restore that
// stopped can continue. FileJournal is the implementation on disk.
type Journal interface {
	// Journaled returns what earlier runs recorded, by source UID. Run reads it once,
	// before it starts.
	Journaled() map[types.UID]Journaled
	// Record notes that the object of UID source is in the target as j says. It is
	// called from many goroutines; its error stops that object.
	Record(source types.UID, j Journaled) error
}

var _ Journal = (*FileJournal)(nil)

// FileJournal records, append-only, the new UID of every object restored. Records are
// written at once and fsync'd in batches: at most every SyncEvery records or
// SyncInterval, and on Close; a record of an operation under way is fsync'd at once,
// so that a restore killed while it runs follows it again rather than starting another.
// Whoever opens it closes it, after Run.
type FileJournal struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	pending int
	last    time.Time
	err     error
	done    map[types.UID]Journaled

	SyncEvery    int
	SyncInterval time.Duration
}

// ErrJournalCorrupt: a line other than the last cannot be read.
var ErrJournalCorrupt = errors.New("restore journal is corrupt")

// OpenJournal opens (creating it if needed) the journal at path, reading the mappings it
// holds. A torn last line, as a crash mid-write leaves, is dropped and overwritten; any
// other unreadable line is an error wrapping ErrJournalCorrupt.
func OpenJournal(path string) (*FileJournal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	done := map[types.UID]Journaled{}
	r := bufio.NewReader(f)
	var good int64
	for line := 1; ; line++ {
		data, err := r.ReadBytes('\n')
		if len(data) > 0 && data[len(data)-1] == '\n' {
			var rec journalRecord
			if jerr := json.Unmarshal(data, &rec); jerr != nil || rec.Source == "" {
				f.Close()
				return nil, fmt.Errorf("%w: %s line %d", ErrJournalCorrupt, path, line)
			}
			if rec.Status == "" {
				rec.Status = Restored
			}
			done[rec.Source] = Journaled{rec.New, rec.Status, rec.Operations, rec.HooksRan}
			good += int64(len(data))
			continue
		}
		if err == io.EOF {
			break // data, if any, is a torn last line
		}
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &FileJournal{f: f, w: bufio.NewWriter(f), last: time.Now(), done: done, SyncEvery: 256, SyncInterval: 200 * time.Millisecond}, nil
}

// Journaled returns the mappings the file held when it was opened.
func (j *FileJournal) Journaled() map[types.UID]Journaled { return j.done }

// Record appends a mapping. Its error is the journal's first write or sync error.
func (j *FileJournal) Record(source types.UID, rec Journaled) error {
	data, _ := json.Marshal(journalRecord{source, rec.New, rec.Status, rec.Operations, rec.HooksRan})
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	j.w.Write(data)
	j.w.WriteByte('\n')
	j.pending++
	underway := slices.ContainsFunc(rec.Operations, func(op Operation) bool { return op.Phase == OperationInProgress })
	if underway || j.pending >= j.SyncEvery || time.Since(j.last) >= j.SyncInterval {
		j.syncLocked()
	}
	return j.err
}

func (j *FileJournal) syncLocked() {
	if j.err == nil {
		j.err = j.w.Flush()
	}
	if j.err == nil {
		j.err = j.f.Sync()
	}
	j.pending, j.last = 0, time.Now()
}

// Close syncs what is pending and closes the file.
func (j *FileJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.syncLocked()
	if err := j.f.Close(); j.err == nil {
		j.err = err
	}
	return j.err
}
