package otsdbformat

import "unicode/utf8"

// The data table's column family (TSDB.FAMILY).
const FamilyData = "t"

// The UID table's families (UniqueId.ID_FAMILY, NAME_FAMILY) and kinds, the
// qualifiers of both (TSDB's UniqueId instances).
const (
	// FamilyID holds name -> UID: row = the name, qualifier = the kind,
	// value = the UID; and the row 0x00 of each kind's highest UID.
	FamilyID = "id"
	// FamilyName holds UID -> name: row = the UID, qualifier = the kind,
	// value = the name. It also holds a UID's meta data under the qualifiers
	// "metric_meta", "tagk_meta" and "tagv_meta", which are not names.
	FamilyName = "name"

	KindMetric = "metrics"
	KindTagk   = "tagk"
	KindTagv   = "tagv"
)

// Name is a UID table name as Go text: OpenTSDB writes names in ISO-8859-1
// (UniqueId.CHARSET), so each byte is the code point of one character.
func Name(b []byte) string {
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	out := make([]byte, 0, len(b)+len(b)/2)
	for _, c := range b {
		out = utf8.AppendRune(out, rune(c))
	}
	return string(out)
}
