package archive

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsafeEntry is wrapped by the *EntryError for an entry that could escape the
	// extraction directory or is not a regular file: absolute paths, "..", links, devices.
	ErrUnsafeEntry = errors.New("unsafe tar entry")
	// ErrLimitExceeded is wrapped by every *LimitError.
	ErrLimitExceeded = errors.New("backup exceeds a size limit")
	// ErrNotFound is returned by Body for an object or version the backup does not hold.
	ErrNotFound = errors.New("not in backup")
	// ErrUnsupportedFormat is returned for a metadata/version this package does not read.
	ErrUnsupportedFormat = errors.New("unsupported backup format version")
)

// EntryError names the tarball entry that could not be read and why.
type EntryError struct {
	Path string
	Err  error
}

func (e *EntryError) Error() string { return fmt.Sprintf("backup entry %q: %v", e.Path, e.Err) }
func (e *EntryError) Unwrap() error { return e.Err }

// Limit names one of the limits of Options a backup may exceed.
type Limit string

// The limits of Options, by what each bounds.
const (
	LimitEntrySize    Limit = "entry size"    // Options.MaxEntryBytes
	LimitManifestSize Limit = "manifest size" // Options.MaxManifestBytes
	LimitTotalSize    Limit = "total size"    // Options.MaxTotalBytes
	LimitEntries      Limit = "entries"       // Options.MaxEntries
)

// LimitError says which limit the backup exceeded, and where.
type LimitError struct {
	Path  string // the entry being read when the limit was crossed
	Limit Limit
	Max   int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("backup entry %q: %s exceeds the limit of %d", e.Path, e.Limit, e.Max)
}

func (e *LimitError) Unwrap() error { return ErrLimitExceeded }
