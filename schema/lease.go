package schema

import (
	"bytes"
	"fmt"
	"strconv"
)

// Lease rows: table TableMeta, family FamilyMeta, one row per background job and
// salt, holding who may work on that salt and until when (the compactor's workers
// share the salts of the data table through them).
//
//	row = "lease" 0x00 | job 0x00 | salt(1)     m:lease = owner " " expiryMs
//
// e.g. row "lease\x00compact\x00\x03", value "db1-4711-9f2c01ab 1764460860000":
// the worker db1-4711-9f2c01ab holds salt 3 of the compaction job until that
// millisecond, by its readers' clocks. The value is text, so that `hbase shell`
// shows it as it is (get 'tsdb-meta', "lease\x00compact\x00\x03").
//
// Invariants:
//
//   - The key is fixed-shape: LeaseRowPrefix, a job name of LeaseJobChars (so it
//     holds no 0x00 and needs no escaping), 0x00, then exactly one salt byte. The
//     rows of one job are the one range under LeaseJobPrefix, in salt order.
//   - LeaseRowPrefix contains 0x00 right after "lease", where the other rows of
//     the meta table ("schema", "metadata" 0x00 metric) have another byte or end:
//     the ranges never overlap.
//   - The value is one owner, one space, one expiry: the owner is 1 to
//     MaxLeaseOwnerLen printable ASCII bytes other than space (hostnames, pids and
//     hex are), the expiry the canonical decimal text of a non-negative number of
//     milliseconds since the epoch (as strconv.FormatInt writes it: no sign, no
//     leading zeros). ParseLeaseValue accepts nothing else, so a value that
//     parses re-encodes to the same bytes; that matters because the lease protocol
//     is check-and-put on these exact bytes.
//   - Expiry 0 is a released lease: expired for every reader, and the owner still
//     says who held it last.
//   - Every write of the cell (acquire, renew, release) is a check-and-put on its
//     previous value, with a cell timestamp strictly greater than the previous
//     cell's: the family keeps one version, and a put older than the cell it
//     replaces would be stored yet invisible (compact/lease.go).

// LeaseRowPrefix is the prefix of every lease row.
const LeaseRowPrefix = "lease\x00"

// QualifierLease is the column of a lease row.
const QualifierLease = "lease"

// LeaseJobCompact is the job of the compaction of sealed buckets into chunks.
const LeaseJobCompact = "compact"

// MaxLeaseOwnerLen bounds the length of a lease owner, in bytes.
const MaxLeaseOwnerLen = 200

// Lease is the value of a lease cell.
type Lease struct {
	// Owner identifies the holder: a host name, a process ID and a random part,
	// so that two processes never share one (ValidLeaseOwner).
	Owner string
	// Expiry is when the lease ends, in milliseconds since the epoch, by the
	// clock of whoever reads it; 0 means released.
	Expiry int64
}

// ExpiredAt reports whether the lease is over at now (ms): it was released or
// its expiry is not after now.
func (l Lease) ExpiredAt(now int64) bool { return l.Expiry <= now }

// LeaseJobPrefix returns the prefix of the lease rows of job: the range of all
// its salts.
func LeaseJobPrefix(dst []byte, job string) []byte {
	return jobPrefix(dst, LeaseRowPrefix, job)
}

// jobPrefix appends rowPrefix, job and 0x00: the range of the rows of one job
// of the per-job-and-salt meta rows (leases, watermarks).
func jobPrefix(dst []byte, rowPrefix, job string) []byte {
	return append(append(append(dst, rowPrefix...), job...), 0x00)
}

// parseJobSaltRow decodes a rowPrefix | job 0x00 | salt(1) key; kind names the
// row in errors ("lease", "watermark").
func parseJobSaltRow(b []byte, rowPrefix, kind string) (job string, salt byte, err error) {
	rest, ok := bytes.CutPrefix(b, []byte(rowPrefix))
	if !ok || len(rest) < 3 || rest[len(rest)-2] != 0x00 {
		return "", 0, fmt.Errorf("schema: %q is not a %s row: %w", b, kind, ErrMalformed)
	}
	job = string(rest[:len(rest)-2])
	if err := ValidLeaseJob(job); err != nil {
		return "", 0, fmt.Errorf("schema: %s row %q: %w", kind, b, err)
	}
	return job, rest[len(rest)-1], nil
}

// LeaseRow appends the lease row key of job and salt to dst. job must pass
// ValidLeaseJob.
func LeaseRow(dst []byte, job string, salt byte) []byte {
	return append(LeaseJobPrefix(dst, job), salt)
}

// ParseLeaseRow decodes a lease row key. It fails, wrapping ErrMalformed, on
// another kind of row, an invalid job name or a key of the wrong length.
func ParseLeaseRow(b []byte) (job string, salt byte, err error) {
	return parseJobSaltRow(b, LeaseRowPrefix, "lease")
}

// LeaseJobChars are the bytes a job name is made of.
const LeaseJobChars = "abcdefghijklmnopqrstuvwxyz0123456789_-"

// ValidLeaseJob reports, wrapping ErrMalformed, what is wrong with a job name: it
// must be 1 to 64 bytes of LeaseJobChars.
func ValidLeaseJob(job string) error {
	if job == "" || len(job) > 64 {
		return fmt.Errorf("schema: lease job %q must be 1 to 64 bytes long: %w", job, ErrMalformed)
	}
	for i := 0; i < len(job); i++ {
		if !bytes.ContainsRune([]byte(LeaseJobChars), rune(job[i])) {
			return fmt.Errorf("schema: lease job %q has a byte outside [a-z0-9_-]: %w", job, ErrMalformed)
		}
	}
	return nil
}

// ValidLeaseOwner reports, wrapping ErrMalformed, what is wrong with an owner: it
// must be 1 to MaxLeaseOwnerLen printable ASCII bytes, none a space.
func ValidLeaseOwner(owner string) error {
	if owner == "" || len(owner) > MaxLeaseOwnerLen {
		return fmt.Errorf("schema: lease owner %q must be 1 to %d bytes long: %w", owner, MaxLeaseOwnerLen, ErrMalformed)
	}
	for i := 0; i < len(owner); i++ {
		if c := owner[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("schema: lease owner %q has a byte that is a space or not printable ASCII (0x%02x): %w",
				owner, c, ErrMalformed)
		}
	}
	return nil
}

// AppendLeaseValue appends the cell value of l to dst. It fails, wrapping
// ErrMalformed, when the owner is not valid or the expiry is negative.
func AppendLeaseValue(dst []byte, l Lease) ([]byte, error) {
	if err := ValidLeaseOwner(l.Owner); err != nil {
		return dst, err
	}
	if l.Expiry < 0 {
		return dst, fmt.Errorf("schema: lease expiry %d is negative: %w", l.Expiry, ErrMalformed)
	}
	dst = append(append(dst, l.Owner...), ' ')
	return strconv.AppendInt(dst, l.Expiry, 10), nil
}

// ParseLeaseValue decodes a lease cell value, as AppendLeaseValue writes it and
// in no other form, wrapping ErrMalformed.
func ParseLeaseValue(b []byte) (Lease, error) {
	owner, expiry, ok := bytes.Cut(b, []byte{' '})
	if !ok {
		return Lease{}, fmt.Errorf("schema: lease value %q is not \"owner expiryMs\": %w", b, ErrMalformed)
	}
	if err := ValidLeaseOwner(string(owner)); err != nil {
		return Lease{}, fmt.Errorf("schema: lease value %q: %w", b, err)
	}
	ms, err := parseDecimal(expiry)
	if err != nil {
		return Lease{}, fmt.Errorf("schema: lease value %q: expiry: %w", b, err)
	}
	return Lease{Owner: string(owner), Expiry: ms}, nil
}
