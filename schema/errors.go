package schema

import "errors"

// Sentinel errors; functions of this package wrap them with context, callers branch
// with errors.Is.
var (
	// ErrMalformed: bytes read from the store are not a valid encoding of what was
	// asked for (a corrupt or foreign row key, qualifier or value), or a value to
	// encode is outside what the layout can represent.
	ErrMalformed = errors.New("malformed")
	// ErrNotCreated: the store has no schema meta row (or not even the meta table):
	// the tables were never created, or their creation was interrupted.
	ErrNotCreated = errors.New("schema not created")
	// ErrMismatch: the store was created with settings that differ from this
	// process's; the error names both values.
	ErrMismatch = errors.New("schema settings mismatch")
	// ErrUnsupportedFormat: the store's format_version is one this binary does not
	// know (written by a newer hbtsdb).
	ErrUnsupportedFormat = errors.New("unsupported schema format version")
)
