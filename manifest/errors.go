package manifest

import (
	"errors"
	"fmt"
)

var (
	// ErrItemAlreadyExists is returned by Add when an item with the same UID or the same
	// identity is already in the manifest.
	ErrItemAlreadyExists = errors.New("item already exists in manifest")
	// ErrUnsupportedFormat is returned by Decode for a formatVersion it does not know.
	ErrUnsupportedFormat = errors.New("unsupported manifest format version")
)

// InvalidItemError says which required field of an item is missing or wrong.
type InvalidItemError struct {
	Item   string // the item as Item.String renders it
	Field  string
	Reason string
}

func (e *InvalidItemError) Error() string {
	return fmt.Sprintf("invalid item %s: field %s %s", e.Item, e.Field, e.Reason)
}

// DecodeError says where in a manifest.json decoding failed: a JSON pointer (RFC 6901)
// such as /groupVersions/2/namespaces/0/items/17/uid, and the byte offset in the
// uncompressed text.
type DecodeError struct {
	Path   string
	Offset int64
	Err    error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode manifest at %s (offset %d): %v", e.Path, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }
