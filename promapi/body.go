package promapi

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
)

// errEmptyBody: a write request without a body. (An empty remote-write message is
// not an empty body: its snappy encoding takes one byte.)
var errEmptyBody = fmt.Errorf("%w: empty request body", errInvalidBody)

// bufferPool recycles request-body buffers. Buffers that grew past maxPooledBuffer
// are dropped rather than kept, so one huge request does not pin its memory.
var bufferPool = sync.Pool{New: func() any { return new([]byte) }}

const (
	maxPooledBuffer = 4 << 20
	// initialBodyBuffer is the most a body buffer is given before bytes arrive,
	// whatever Content-Length announces: buffers grow (doubling) as bytes arrive,
	// so that a sender announcing 16 MiB and sending nothing costs nothing.
	initialBodyBuffer = 64 << 10
)

func getBuffer() *[]byte {
	b := bufferPool.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooledBuffer {
		bufferPool.Put(b)
	}
}

// readBody reads the whole request body into buf within the limits: a body over
// limits.MaxBodyBytes is refused (by its Content-Length before anything is read,
// or once that many bytes arrived; 413), as is an empty one (400), one that does
// not arrive within limits.BodyReadTimeout (408) and one whose bytes do not fit
// in the in-flight byte budget (429). Every byte read is reserved in res.
func (h *writeHandler) readBody(w http.ResponseWriter, r *http.Request, buf *[]byte, res *reservation) error {
	limit := h.limits.MaxBodyBytes
	if r.ContentLength > limit {
		closeConnection(w, r)
		return fmt.Errorf("%w: Content-Length %d bytes is over the limit of %d bytes (--write.max-body-bytes)",
			errContentTooLarge, r.ContentLength, limit)
	}
	if r.Body == nil {
		return errEmptyBody
	}
	data, over, err := readBodyWithin(w, r, *buf, limit, h.limits.BodyReadTimeout, res)
	*buf = data
	switch {
	case errors.Is(err, errOverloaded):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		return bodyTimeout{fmt.Errorf("%w: request body not received within %v (--write.body-read-timeout); %d bytes arrived",
			errInvalidBody, h.limits.BodyReadTimeout, len(data))}
	case err != nil:
		return fmt.Errorf("%w: read request body: %v", errInvalidBody, err)
	case over:
		return fmt.Errorf("%w: request body is over the limit of %d bytes (--write.max-body-bytes)", errContentTooLarge, limit)
	case len(data) == 0:
		return errEmptyBody
	}
	return nil
}

// readBodyWithin reads r's body into buf[:0] (readGrowing: at most limit bytes,
// each reserved in res as it arrives) under a read deadline of timeout. When
// the body is not read to its end (an error, or over the limit), the connection
// is closed after the answer: without this, net/http would read the rest (up
// to 256 KiB) before answering, with no deadline, to keep the connection
// alive; and an expired deadline stays expired.
func readBodyWithin(w http.ResponseWriter, r *http.Request, buf []byte, limit int64, timeout time.Duration,
	res *reservation) (_ []byte, over bool, _ error) {
	lift := bodyDeadline(w, timeout)
	data, over, err := readGrowing(r.Body, buf, limit, r.ContentLength, res)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Too slow a sender: no more time for the rest.
		w.Header().Set("Connection", "close")
	case err != nil || over:
		closeConnection(w, r)
	default:
		lift()
	}
	return data, over, err
}

// bodyDeadline sets the connection's read deadline to timeout from now and
// returns the function that lifts it once the body is read (a deadline left in
// place would make the server's background read of the connection cancel the
// request while it is written). A ResponseWriter that has no connection
// deadline (a test's recorder) reads without one.
func bodyDeadline(w http.ResponseWriter, timeout time.Duration) (lift func()) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return func() {}
	}
	return func() { _ = rc.SetReadDeadline(time.Time{}) }
}

// closeConnection answers a request before its body was read to its end: it
// reads and discards what is left of the body (at most lingerBytes, within
// lingerTime), then asks net/http to close the connection after the answer
// instead of keeping it alive. Discarding first is the lingering close of
// nginx and Apache: a sender still writing its body when the server closes
// would get a connection reset instead of the answer (seen as a "connection
// reset by peer" in place of a 413), and a remote-write sender retries a
// reset but not a 4xx. A sender slower than lingerTime, or with more left than
// lingerBytes, gets the reset.
func closeConnection(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(lingerTime)); err != nil {
		return
	}
	_, _ = io.CopyN(io.Discard, r.Body, lingerBytes)
}

// lingerBytes and lingerTime bound what closeConnection discards of an unread
// body before the answer.
const (
	lingerBytes = 64 << 20
	lingerTime  = 5 * time.Second
)

// readGrowing reads src to its end into buf[:0], growing buf only as bytes
// arrive: by doubling, from at most initialBodyBuffer, never past expected (a
// Content-Length, 0 when unknown) while fewer bytes arrived, nor past limit+1.
// Each byte read is reserved in res first; over reports more than limit bytes
// (reading stops there).
func readGrowing(src io.Reader, buf []byte, limit, expected int64, res *reservation) (_ []byte, over bool, _ error) {
	buf = buf[:0]
	var probe [1]byte
	for {
		var dst []byte
		probing := false
		switch {
		case len(buf) < cap(buf):
			dst = buf[len(buf):min(int64(cap(buf)), limit+1)]
		case expected > 0 && int64(len(buf)) >= expected:
			// All that was announced is here: look for the end without growing.
			dst, probing = probe[:], true
		default:
			grow := max(cap(buf), initialBodyBuffer)
			if expected > 0 {
				grow = min(grow, int(expected)-len(buf))
			}
			grow = int(min(int64(grow), limit+1-int64(len(buf))))
			buf = slices.Grow(buf, grow)
			dst = buf[len(buf):min(int64(cap(buf)), limit+1)]
		}
		n, err := src.Read(dst)
		if rerr := res.reserve(int64(n)); rerr != nil {
			return buf, false, rerr
		}
		if probing {
			buf = append(buf, dst[:n]...)
		} else {
			buf = buf[:len(buf)+n]
		}
		if int64(len(buf)) > limit {
			return buf, true, nil
		}
		if err == io.EOF {
			return buf, false, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
}

// snappyFramedMagic starts a body in snappy's framed (stream) format, which both
// remote-write specs forbid ("The block format MUST be used - the framed format
// MUST NOT be used"); recognising it gives the sender a precise error.
var snappyFramedMagic = []byte("\xff\x06\x00\x00sNaPpY")

// maxSnappyExpansion bounds what one byte of a snappy block can decode to: the
// densest element, a copy with a 2-byte offset, takes 3 bytes for 64 bytes of
// output (literals take more than they give, 1-byte-offset copies 2 bytes for at
// most 11, 4-byte-offset copies 5 for 64).
const (
	snappyMaxCopyLen     = 64
	snappyMinCopyElement = 3
)

// maxSnappyDecodedLen is the most a snappy block of len(body) bytes can decode
// to, whatever its header claims.
func maxSnappyDecodedLen(body []byte) int64 {
	_, hdr := binary.Uvarint(body)
	if hdr <= 0 {
		return 0
	}
	return int64(len(body)-hdr) * snappyMaxCopyLen / snappyMinCopyElement
}

// decodeSnappy decodes a snappy block-format body into dst (reused when large
// enough). The decoded length, which a block states in its header, is checked
// against limits.MaxDecompressedBytes and against what a block of that size can
// hold before anything is allocated, so a small body cannot make the server
// allocate gigabytes; then it is reserved in res (429 when it does not fit).
func (h *writeHandler) decodeSnappy(dst *[]byte, body []byte, res *reservation) ([]byte, error) {
	if bytes.HasPrefix(body, snappyFramedMagic) {
		return nil, fmt.Errorf("%w: body is in snappy's framed format; remote write requires the block format", errInvalidBody)
	}
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return nil, fmt.Errorf("%w: body is not snappy block-compressed: %v", errInvalidBody, err)
	}
	limit := h.limits.MaxDecompressedBytes
	if int64(n) > limit {
		return nil, fmt.Errorf("%w: snappy-decoded body of %d bytes is over the limit of %d bytes (--write.max-decompressed-bytes)",
			errInvalidBody, n, limit)
	}
	if most := maxSnappyDecodedLen(body); int64(n) > most {
		return nil, fmt.Errorf("%w: snappy block of %d bytes claims a decoded length of %d bytes, more than the %d bytes "+
			"a block of that size can hold (the limit is %d bytes, --write.max-decompressed-bytes)",
			errInvalidBody, len(body), n, most, limit)
	}
	if err := res.reserve(int64(n)); err != nil {
		return nil, err
	}
	if cap(*dst) < n {
		*dst = make([]byte, n)
	}
	out, err := snappy.Decode((*dst)[:n], body)
	if err != nil {
		return nil, fmt.Errorf("%w: body is not snappy block-compressed: %v", errInvalidBody, err)
	}
	*dst = out
	return out, nil
}

// decodeGzip decompresses a gzip body into dst, refusing more than
// limits.MaxDecompressedBytes of output (gzip does not state its decoded length
// up front, so the bound is enforced while decoding, reading one byte past it to
// tell); the output is reserved in res as it grows.
func (h *writeHandler) decodeGzip(dst *[]byte, body []byte, res *reservation) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: body is not gzip-compressed: %v", errInvalidBody, err)
	}
	limit := h.limits.MaxDecompressedBytes
	out, over, err := readGrowing(io.LimitReader(zr, limit+1), *dst, limit, 0, res)
	*dst = out
	switch {
	case errors.Is(err, errOverloaded):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w: body is not valid gzip: %v", errInvalidBody, err)
	case over:
		return nil, fmt.Errorf("%w: gzip-decoded body is over the limit of %d bytes (--write.max-decompressed-bytes)", errInvalidBody, limit)
	}
	return out, nil
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
