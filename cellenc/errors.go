package cellenc

import "github.com/hbtsdb/hbtsdb/schema"

// ErrMalformed is schema.ErrMalformed, the one sentinel of bytes read from the
// store that are not a valid encoding (of a key or of a value), so that a caller
// branches on it whichever package decoded: the cell values are not a valid
// encoding of what was asked for, or a value to encode is outside what the
// layout can represent. Functions of this package wrap it with context.
var ErrMalformed = schema.ErrMalformed
