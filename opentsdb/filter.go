package opentsdb

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Filter is one tag-value filter of a sub-query (OpenTSDB's TagVFilter), as
// the JSON form names it: {"type","tagk","filter","groupBy"}.
type Filter struct {
	Type    string `json:"type"`
	Tagk    string `json:"tagk"`
	Filter  string `json:"filter"`
	GroupBy bool   `json:"groupBy"`

	match    func(tagv string, ok bool) bool
	literals []string // a literal filter's values, sorted (lower-cased when case-insensitive)
}

// FilterTypes are the filter types OpenTSDB 2.4.1 loads (TagVFilter's
// tagv_filter_map; its not_key filter is left out there), and NewFilter
// knows.
var FilterTypes = []string{"literal_or", "iliteral_or", "not_literal_or", "not_iliteral_or",
	"wildcard", "iwildcard", "regexp"}

// NewFilter builds a filter of a type of FilterTypes, as
// TagVFilter.Builder.build does, with its checks and messages: the type and
// tag key must be given, the type must be one of FilterTypes (as given,
// case-sensitive), and the filter must suit the type.
func NewFilter(typ, tagk, filter string, groupBy bool) (*Filter, error) {
	return buildFilter(typ, tagk, filter, groupBy)
}

func buildFilter(typ, tagk, filter string, groupBy bool) (*Filter, error) {
	if typ == "" {
		return nil, fmt.Errorf("The filter type cannot be null or empty")
	}
	if tagk == "" {
		return nil, fmt.Errorf("The tagk cannot be null or empty")
	}
	if !slices.Contains(FilterTypes, typ) {
		return nil, fmt.Errorf("Could not find a tag value filter of the type: %s", typ)
	}
	f := &Filter{Type: typ, Tagk: tagk, Filter: filter, GroupBy: groupBy}
	if filter == "" {
		return nil, fmt.Errorf("Filter cannot be null or empty")
	}
	switch f.Type {
	case "literal_or", "iliteral_or", "not_literal_or", "not_iliteral_or":
		if filter == "|" {
			return nil, fmt.Errorf("Filter must contain more than just a pipe")
		}
		ci := f.Type == "iliteral_or" || f.Type == "not_iliteral_or"
		not := strings.HasPrefix(f.Type, "not_")
		set := map[string]bool{}
		for _, s := range javaSplitPipe(filter) {
			if ci {
				s = strings.ToLower(s)
			}
			set[s] = true
		}
		f.literals = sortedKeys(set)
		f.match = func(v string, ok bool) bool {
			if !ok {
				return not
			}
			if ci {
				v = strings.ToLower(v)
			}
			return set[v] != not
		}
	case "wildcard", "iwildcard":
		m, err := wildcard(filter, f.Type == "iwildcard")
		if err != nil {
			return nil, err
		}
		f.match = m
	case "regexp":
		re, err := regexp.Compile(filter)
		if err != nil {
			return nil, fmt.Errorf("invalid regexp %q: %w", filter, err)
		}
		f.match = func(v string, ok bool) bool { return ok && re.MatchString(v) }
	}
	return f, nil
}

// identity is what the filter's equals compares: its kind, tag key and
// values (a literal filter's set of literals), not its group-by.
func (f *Filter) identity() string {
	if f.literals != nil {
		return fmt.Sprintf("%s:%q=%q", f.Type, f.Tagk, f.literals)
	}
	return fmt.Sprintf("%s:%q=%q", f.Type, f.Tagk, f.Filter)
}

// Match reports whether a series with these tags passes the filter.
func (f *Filter) Match(tags map[string]string) bool {
	v, ok := tags[f.Tagk]
	return f.match(v, ok)
}

// javaSplitPipe is Java's String.split("\\|"): trailing empty strings dropped.
func javaSplitPipe(s string) []string {
	parts := strings.Split(s, "|")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// wildcard is TagVWildcardFilter: leading and trailing asterisks make it a
// suffix or prefix match, inner ones split it into components that must
// appear in order.
func wildcard(filter string, ci bool) (func(string, bool) bool, error) {
	actual := filter
	if ci {
		actual = strings.ToLower(filter)
	}
	if !strings.Contains(actual, "*") {
		return nil, fmt.Errorf("Filter must contain an asterisk")
	}
	hasPostfix, hasPrefix := false, false
	if actual[0] == '*' {
		hasPostfix = true
		for actual[0] == '*' && len(actual) >= 2 {
			actual = actual[1:]
		}
	}
	if actual[len(actual)-1] == '*' {
		hasPrefix = true
		for actual[len(actual)-1] == '*' && len(actual) >= 2 {
			actual = actual[:len(actual)-1]
		}
	}
	var components []string
	if strings.IndexByte(actual, '*') > 0 {
		components = strings.Split(actual, "*")
	} else {
		components = []string{actual}
	}
	return func(v string, ok bool) bool {
		if !ok {
			return false
		}
		if len(components) == 1 && components[0] == "*" {
			return true
		}
		if ci {
			v = strings.ToLower(v)
		}
		if hasPostfix && !hasPrefix && !strings.HasSuffix(v, components[len(components)-1]) {
			return false
		}
		if hasPrefix && !hasPostfix && !strings.HasPrefix(v, components[0]) {
			return false
		}
		idx := 0
		for _, c := range components {
			if indexFrom(v, c, idx) < 0 {
				return false
			}
			idx += len(c)
		}
		return true
	}, nil
}

// indexFrom is Java's String.indexOf(s, from).
func indexFrom(v, s string, from int) int {
	if from > len(v) {
		if s == "" {
			return len(v)
		}
		return -1
	}
	i := strings.Index(v[from:], s)
	if i < 0 {
		return -1
	}
	return from + i
}

// parseTagFilters is Tags.parseWithMetricAndFilters: "metric",
// "metric{tagk=v,...}" (group-by filters) and "metric{...}{tagk=v,...}"
// (filters that do not group).
func parseTagFilters(m string) (string, []*Filter, error) {
	if m == "" {
		return "", nil, fmt.Errorf("Metric cannot be null or empty")
	}
	curly := strings.IndexByte(m, '{')
	if curly < 0 {
		return m, nil, nil
	}
	n := len(m)
	if m[n-1] != '}' {
		return "", nil, fmt.Errorf("Missing '}' at the end of: %s", m)
	}
	if curly == n-2 {
		return m[:n-2], nil, nil
	}
	var filters []*Filter
	closing := strings.IndexByte(m, '}')
	if closing < curly {
		return "", nil, fmt.Errorf("'}' before '{' in: %s", m)
	}
	if closing != n-1 {
		open := strings.LastIndexByte(m, '{')
		for _, spec := range strings.Split(m[open+1:n-1], ",") {
			if spec == "" {
				break
			}
			k, v, err := parseTag(spec)
			if err == nil {
				filters, err = addFilter(filters, k, v, false)
			}
			if err != nil {
				return "", nil, fmt.Errorf("When parsing filter '%s': %w", spec, err)
			}
		}
	}
	for _, spec := range strings.Split(m[curly+1:closing], ",") {
		if spec == "" && closing != n-1 {
			break
		}
		k, v, err := parseTag(spec)
		if err == nil {
			filters, err = addFilter(filters, k, v, true)
		}
		if err != nil {
			return "", nil, fmt.Errorf("When parsing tag '%s': %w", spec, err)
		}
	}
	return m[:curly], filters, nil
}

// parseTag is Tags.parse: "tagk=tagv".
func parseTag(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.Contains(v, "=") {
		return "", "", fmt.Errorf("invalid tag: %s", s)
	}
	if k == "" {
		return "", "", fmt.Errorf("empty tag name in %s", s)
	}
	if v == "" {
		return "", "", fmt.Errorf("empty tag value in %s", s)
	}
	return k, v, nil
}

// addFilter is TagVFilter.mapToFilters for one tag (getFilter): "*" is a
// wildcard, "type(x)" a filter of that type (lower-cased), a value with an
// asterisk a case-insensitive wildcard, anything else a literal_or; a
// group-by filter equal to one already there marks that one group-by
// instead.
func addFilter(filters []*Filter, tagk, v string, groupBy bool) ([]*Filter, error) {
	if tagk == "" {
		return nil, fmt.Errorf("Tagk cannot be null or empty")
	}
	if v == "" {
		return nil, fmt.Errorf("Filter cannot be null or empty")
	}
	var f *Filter
	var err error
	switch paren := strings.IndexByte(v, '('); {
	case v == "*":
		f, err = buildFilter("iwildcard", tagk, "*", groupBy)
		if f != nil {
			f.Type = "wildcard" // TagVWildcardFilter(tagk, "*", true) reports "wildcard"
		}
	case paren > -1:
		if v[len(v)-1] != ')' {
			return nil, fmt.Errorf("Filter must end with a ')': %s", v)
		}
		f, err = buildFilter(strings.ToLower(v[:paren]), tagk, v[paren+1:len(v)-1], groupBy)
	case strings.Contains(v, "*"):
		f, err = buildFilter("iwildcard", tagk, v, groupBy)
		if f != nil {
			f.Type = "wildcard"
		}
	default:
		f, err = buildFilter("literal_or", tagk, v, groupBy)
	}
	if err != nil {
		return nil, err
	}
	if groupBy {
		for _, e := range filters {
			if e.identity() == f.identity() {
				e.GroupBy = true
				return filters, nil
			}
		}
	}
	return append(filters, f), nil
}
