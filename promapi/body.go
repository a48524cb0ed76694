package promapi

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/golang/snappy"

	"github.com/hbtsdb/hbtsdb/write"
)

// bufferPool recycles request-body buffers. Buffers that grew past maxPooledBuffer
// are dropped rather than kept, so one huge request does not pin its memory.
// errEmptyBody: a write request without a body. (An empty remote-write message is
// not an empty body: its snappy encoding takes one byte.)
var errEmptyBody = fmt.Errorf("%w: empty request body", write.ErrInvalid)

var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 4 << 20

func getBuffer() *bytes.Buffer {
	b := bufferPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		bufferPool.Put(b)
	}
}

// readBody reads the whole request body into buf, refusing a body over
// limits.MaxBodyBytes (by its Content-Length before reading anything, or once
// that many bytes were read) and an empty one.
func (h *writeHandler) readBody(r *http.Request, buf *bytes.Buffer) error {
	limit := h.limits.MaxBodyBytes
	if r.ContentLength > limit {
		return fmt.Errorf("%w: Content-Length %d bytes is over the limit of %d bytes (--write.max-body-bytes)",
			errContentTooLarge, r.ContentLength, limit)
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return fmt.Errorf("%w: read request body: %v", write.ErrInvalid, err)
	}
	if n > limit {
		return fmt.Errorf("%w: request body is over the limit of %d bytes (--write.max-body-bytes)", errContentTooLarge, limit)
	}
	if n == 0 {
		return errEmptyBody
	}
	return nil
}

// snappyFramedMagic starts a body in snappy's framed (stream) format, which both
// remote-write specs forbid ("The block format MUST be used - the framed format
// MUST NOT be used"); recognising it gives the sender a precise error.
var snappyFramedMagic = []byte("\xff\x06\x00\x00sNaPpY")

// decodeSnappy decodes a snappy block-format body into dst (reused when large
// enough). The decoded length, which a block states in its header, is checked
// against limits.MaxDecompressedBytes before anything is allocated, so a small
// body cannot make the server allocate gigabytes.
func (h *writeHandler) decodeSnappy(dst *bytes.Buffer, body []byte) ([]byte, error) {
	if bytes.HasPrefix(body, snappyFramedMagic) {
		return nil, fmt.Errorf("%w: body is in snappy's framed format; remote write requires the block format", write.ErrInvalid)
	}
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return nil, fmt.Errorf("%w: body is not snappy block-compressed: %v", write.ErrInvalid, err)
	}
	if limit := h.limits.MaxDecompressedBytes; int64(n) > limit {
		return nil, fmt.Errorf("%w: snappy-decoded body of %d bytes is over the limit of %d bytes (--write.max-decompressed-bytes)",
			write.ErrInvalid, n, limit)
	}
	dst.Grow(n)
	out, err := snappy.Decode(dst.Bytes()[:n], body)
	if err != nil {
		return nil, fmt.Errorf("%w: body is not snappy block-compressed: %v", write.ErrInvalid, err)
	}
	return out, nil
}

// decodeGzip decompresses a gzip body into dst, refusing more than
// limits.MaxDecompressedBytes of output (gzip does not state its decoded length
// up front, so the bound is enforced while decoding).
func (h *writeHandler) decodeGzip(dst *bytes.Buffer, body []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: body is not gzip-compressed: %v", write.ErrInvalid, err)
	}
	limit := h.limits.MaxDecompressedBytes
	n, err := dst.ReadFrom(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: body is not valid gzip: %v", write.ErrInvalid, err)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: gzip-decoded body is over the limit of %d bytes (--write.max-decompressed-bytes)", write.ErrInvalid, limit)
	}
	return dst.Bytes(), nil
}

// contentEncoding returns the request's Content-Encoding, lower-cased, "" when
// absent. Content codings are case-insensitive (RFC 9110, 8.4.1); a list of
// several codings is not accepted by either endpoint.
func contentEncoding(r *http.Request) string {
	return strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
}

// decodedBody replaces a request's body once it is decompressed, so that the
// handler behind a decoding middleware reads the bytes without copying them.
type decodedBody struct {
	*bytes.Reader
	data []byte
}

func (decodedBody) Close() error { return nil }

// bodyBytes returns what a decoding middleware left in r.Body.
func bodyBytes(r *http.Request) ([]byte, error) {
	if d, ok := r.Body.(decodedBody); ok {
		return d.data, nil
	}
	return nil, errors.New("promapi: request body was not decoded by the snappy middleware")
}
