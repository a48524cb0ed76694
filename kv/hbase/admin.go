package hbase

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"

	"github.com/hbtsdb/hbtsdb/kv"
)

// hbaseForever is HBase's TTL for "keep forever" (HConstants.FOREVER).
const hbaseForever = math.MaxInt32

// tableName maps a logical table name to its HBase name, checking that the result
// is a legal HBase table qualifier.
func (s *Store) tableName(name string) ([]byte, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty table name", kv.ErrInvalidArgument)
	}
	for _, c := range name {
		if !isTableNameChar(c) {
			return nil, fmt.Errorf("%w: table name %q: HBase allows only [A-Za-z0-9_.-]", kv.ErrInvalidArgument, name)
		}
	}
	return []byte(s.opts.TablePrefix + name), nil
}

// familyAttributes is the HBase column family schema of f, as the attribute map
// that HBase's ColumnFamilyDescriptor keeps (and `hbase shell` prints).
//
// HBase's NEW_VERSION_BEHAVIOR family attribute is deliberately not set: it
// would make a put written after a delete visible whatever its timestamp, but
// it made scans 3-6x slower here (kv/doc.go says what callers do instead).
func familyAttributes(f kv.FamilySpec) []attribute {
	attrs := []attribute{
		{"VERSIONS", strconv.Itoa(f.Versions()), true},
	}
	if ttl := ttlSeconds(f.TTL); ttl != hbaseForever {
		attrs = append(attrs, attribute{"TTL", strconv.FormatInt(ttl, 10), true})
	}
	attrs = append(attrs,
		attribute{"COMPRESSION", upperOr(f.Compression, "NONE"), false},
		attribute{"DATA_BLOCK_ENCODING", upperOr(f.BlockEncoding, "NONE"), false},
		attribute{"BLOOMFILTER", upperOr(f.BloomFilter, "ROW"), false},
	)
	if f.InMemoryCompaction != "" {
		attrs = append(attrs, attribute{"IN_MEMORY_COMPACTION", strings.ToUpper(f.InMemoryCompaction), false})
	}
	return attrs
}

// attribute is one family setting; numeric ones are printed unquoted in the shell.
type attribute struct {
	key, value string
	numeric    bool
}

// ttlSeconds converts a TTL to HBase's whole seconds; 0 is "forever". TableSpec.Validate
// requires whole seconds; a fraction would be rounded up, so that HBase never
// hides a cell earlier than asked.
func ttlSeconds(ttl time.Duration) int64 {
	if ttl <= 0 {
		return hbaseForever
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	if secs >= hbaseForever {
		return hbaseForever
	}
	return secs
}

func upperOr(v, def string) string {
	if v == "" {
		return def
	}
	return strings.ToUpper(v)
}

// EnsureTable creates the table (as <prefix><name>) if it does not exist and
// reports whether it did. HBase creates the table with all its regions online
// before EnsureTable returns.
func (s *Store) EnsureTable(ctx context.Context, spec kv.TableSpec) (bool, error) {
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	if err := spec.Validate(); err != nil {
		return false, fmt.Errorf("hbase: ensure table: %w", err)
	}
	table, err := s.tableName(spec.Name)
	if err != nil {
		return false, fmt.Errorf("hbase: ensure table: %w", err)
	}
	start := time.Now()
	err = s.createTable(ctx, table, spec)
	switch {
	case err == nil:
		s.log.Info("hbase: table created", "table", string(table), "families", len(spec.Families),
			"regions", len(spec.SplitKeys)+1, "elapsed", time.Since(start).Round(time.Millisecond))
		return true, nil
	case isJavaException(err, "TableExistsException"):
		return false, nil
	}
	return false, fmt.Errorf("hbase: create table %s: %w", table, classify(ctx, err))
}

// createTable sends a CreateTable request and waits for its procedure to finish.
//
// gohbase's NewCreateTable keeps only the family attributes it has defaults for and
// drops any other; so the request is built by gohbase and its families replaced
// (createTableCall.ToProto), and the procedure is awaited here as gohbase's
// AdminClient.CreateTable would (whose admin client cannot be closed).
func (s *Store) createTable(ctx context.Context, table []byte, spec kv.TableSpec) error {
	families := make(map[string]map[string]string, len(spec.Families))
	for _, f := range spec.Families {
		families[f.Name] = nil
	}
	var opts []func(*hrpc.CreateTable)
	if len(spec.SplitKeys) > 0 {
		opts = append(opts, hrpc.SplitKeys(spec.SplitKeys))
	}
	call := &createTableCall{CreateTable: hrpc.NewCreateTable(ctx, table, families, opts...), spec: spec}
	msg, err := s.adminRPC.SendRPC(call)
	if err != nil {
		return err
	}
	res, ok := msg.(*pb.CreateTableResponse)
	if !ok {
		return fmt.Errorf("create table answered with a %T", msg)
	}
	return s.awaitProcedure(ctx, res.GetProcId())
}

// createTableCall is gohbase's CreateTable with the column family schemas of spec.
type createTableCall struct {
	*hrpc.CreateTable
	spec kv.TableSpec
}

// ToProto returns gohbase's request with each family's attributes set from spec
// (gohbase's defaults for the attributes spec does not set are kept).
func (c *createTableCall) ToProto() proto.Message {
	req := c.CreateTable.ToProto().(*pb.CreateTableRequest)
	for _, cf := range req.GetTableSchema().GetColumnFamilies() {
		f, _ := c.spec.Family(string(cf.GetName()))
		set := make(map[string]string)
		for _, a := range familyAttributes(f) {
			set[a.key] = a.value
		}
		if _, ok := set["TTL"]; !ok {
			set["TTL"] = strconv.Itoa(hbaseForever)
		}
		attrs := cf.Attributes[:0]
		for _, a := range cf.Attributes {
			if _, ok := set[string(a.First)]; !ok {
				attrs = append(attrs, a)
			}
		}
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			attrs = append(attrs, &pb.BytesBytesPair{First: []byte(k), Second: []byte(set[k])})
		}
		cf.Attributes = attrs
	}
	return req
}

// awaitProcedure polls the master until procedure procID finished, backing off from
// 16ms to 1s, and returns its exception as an error.
func (s *Store) awaitProcedure(ctx context.Context, procID uint64) error {
	backoff := 16 * time.Millisecond
	for {
		msg, err := s.adminRPC.SendRPC(hrpc.NewGetProcedureState(ctx, procID))
		if err != nil {
			return err
		}
		res, ok := msg.(*pb.GetProcedureResultResponse)
		if !ok {
			return fmt.Errorf("procedure state answered with a %T", msg)
		}
		switch res.GetState() {
		case pb.GetProcedureResultResponse_NOT_FOUND:
			return fmt.Errorf("procedure %d not found", procID)
		case pb.GetProcedureResultResponse_FINISHED:
			if e := res.GetException(); e != nil {
				ge := e.GetGenericException()
				if ge == nil {
					return fmt.Errorf("procedure %d failed without an exception", procID)
				}
				return fmt.Errorf("procedure exception: %s: %s", ge.GetClassName(), ge.GetMessage())
			}
			return nil
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, time.Second)
	}
}

// DropTable disables and deletes the table; kv.ErrTableNotFound if it is
// absent. A table left disabled by an interrupted DropTable is deleted too.
func (s *Store) DropTable(ctx context.Context, name string) error {
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	table, err := s.tableName(name)
	if err != nil {
		return fmt.Errorf("hbase: drop table: %w", err)
	}
	start := time.Now()
	err = s.admin.DisableTable(hrpc.NewDisableTable(ctx, table))
	if err != nil && !isJavaException(err, "TableNotEnabledException") {
		return fmt.Errorf("hbase: drop table %s: disable: %w", table, classify(ctx, err))
	}
	if err := s.admin.DeleteTable(hrpc.NewDeleteTable(ctx, table)); err != nil {
		return fmt.Errorf("hbase: drop table %s: delete: %w", table, classify(ctx, err))
	}
	s.log.Info("hbase: table dropped", "table", string(table), "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// ListTables returns the logical names of the tables of HBase's default namespace
// that carry the table prefix, sorted.
func (s *Store) ListTables(ctx context.Context) ([]string, error) {
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	list, err := hrpc.NewListTableNames(ctx)
	if err != nil {
		return nil, fmt.Errorf("hbase: list tables: %w", err)
	}
	names, err := s.admin.ListTableNames(list)
	if err != nil {
		return nil, fmt.Errorf("hbase: list tables: %w", classify(ctx, err))
	}
	var out []string
	for _, n := range names {
		ns := string(n.GetNamespace())
		if ns != "" && ns != "default" {
			continue
		}
		if name, ok := strings.CutPrefix(string(n.GetQualifier()), s.opts.TablePrefix); ok && name != "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ShellCommands renders the `hbase shell` commands that create the tables of specs
// with the table prefix ("" means DefaultTablePrefix) as EnsureTable does, one
// create command a line, for operators who create tables by hand (tsdb schema
// create --print). Split keys are double-quoted Ruby strings with \xNN escapes for
// bytes that are not printable ASCII. For example:
//
//	create 'tsdb-data', {NAME => 'r', VERSIONS => 1, TTL => 3600, COMPRESSION => 'SNAPPY', DATA_BLOCK_ENCODING => 'NONE', BLOOMFILTER => 'ROW'}, SPLITS => ["\x01", "\x02"]
//
// A TTL of zero (forever) is left out, HBase's default. The specs are rendered as
// given: check them with TableSpec.Validate first.
func ShellCommands(prefix string, specs []kv.TableSpec) string {
	if prefix == "" {
		prefix = DefaultTablePrefix
	}
	var b strings.Builder
	for _, spec := range specs {
		b.WriteString("create ")
		b.WriteString(rubySingleQuoted(prefix + spec.Name))
		for _, f := range spec.Families {
			b.WriteString(", {NAME => ")
			b.WriteString(rubySingleQuoted(f.Name))
			for _, a := range familyAttributes(f) {
				b.WriteString(", ")
				b.WriteString(a.key)
				b.WriteString(" => ")
				if a.numeric {
					b.WriteString(a.value)
				} else {
					b.WriteString(rubySingleQuoted(a.value))
				}
			}
			b.WriteString("}")
		}
		if len(spec.SplitKeys) > 0 {
			b.WriteString(", SPLITS => [")
			for i, k := range spec.SplitKeys {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(rubyBinaryString(k))
			}
			b.WriteString("]")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// rubySingleQuoted quotes s for Ruby, where only \ and ' need escaping.
func rubySingleQuoted(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// rubyBinaryString writes b as a double-quoted Ruby string: printable ASCII as is,
// except ", \ and # (string interpolation), everything else as \xNN, the form
// HBase's Bytes.toStringBinary prints.
func rubyBinaryString(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range b {
		if c >= 0x20 && c < 0x7F && c != '"' && c != '\\' && c != '#' {
			sb.WriteByte(c)
			continue
		}
		fmt.Fprintf(&sb, `\x%02X`, c)
	}
	sb.WriteByte('"')
	return sb.String()
}
