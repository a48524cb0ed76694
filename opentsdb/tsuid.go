package opentsdb

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// FormatTSUID writes a series ID as hbtsdb's TSUID: 16 upper-case hex digits
// (OpenTSDB writes its UIDs in upper-case hex too).
func FormatTSUID(id uint64) string {
	return fmt.Sprintf("%016X", id)
}

// ParseTSUID reads a TSUID that FormatTSUID wrote (or that show_tsuids,
// /api/search/lookup or /api/query/last answered): up to 16 hex digits, in
// either case; shorter ones are padded with zeros in front, as
// UniqueId.stringToUid pads an odd length. OpenTSDB's own TSUIDs (a metric
// UID and tag UID pairs, 18 or more digits) name no hbtsdb series: they are
// refused with a message that says so.
func ParseTSUID(s string) (uint64, error) {
	if s == "" {
		return 0, badRequest("UID was empty")
	}
	if len(s) > 16 {
		return 0, badRequest("tsuid %q is not an hbtsdb series ID: hbtsdb's tsuids are 16 hex digits, as show_tsuids, "+
			"/api/search/lookup and /api/query/last answer them; OpenTSDB's own tsuids name no series here, "+
			"query by metric and tags instead", s)
	}
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, badRequest("tsuid %q is not an hbtsdb series ID: it must be 16 hex digits", s)
	}
	return id, nil
}

// parseTSUIDs is ParseTSUID of each of a sub-query's tsuids, each ID once
// (OpenTSDB's row key regex matches a series once however often it is named).
func parseTSUIDs(ss []string) ([]uint64, error) {
	ids := make([]uint64, 0, len(ss))
	for _, s := range ss {
		id, err := ParseTSUID(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// parseTSUIDParam is QueryRpc.parseTsuidTypeSubQuery, a GET tsuid=
// parameter: agg:[interval-agg[-fill]:][rate[{counter[,max[,reset]]}]:]tsuid[,tsuid...].
func parseTSUIDParam(q string) (jsonSubQuery, error) {
	var s jsonSubQuery
	if q == "" {
		return s, badRequest("The tsuid query string was empty")
	}
	parts, err := splitSubQuery(q)
	if err != nil {
		return s, err
	}
	s.Aggregator = parts[0]
	s.TSUIDs = strings.Split(parts[len(parts)-1], ",")
	for _, p := range parts[1 : len(parts)-1] {
		if ok, err := s.rateOrDownsample(p); ok || err != nil {
			if err != nil {
				return s, err
			}
			continue
		}
		if lp := strings.ToLower(p); strings.HasPrefix(lp, "percentiles") || strings.HasPrefix(lp, "show-histogram-buckets") {
			return s, badRequest("%s in tsuid=%s is not supported by hbtsdb's /api/query", p, q)
		}
	}
	return s, nil
}
