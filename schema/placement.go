package schema

import "github.com/prometheus/common/model"

// Placement is where the data rows of a series live: the parts of its data row
// keys (datakey.go) that come from its labels and the store's settings, before
// the series ID. Every series of one host shares a salt, so a host's rows, a
// (host, metric) pair's and a series' are each one contiguous key range.
//
// Host and Metric are the raw label values; DataRowKey and the prefix
// functions escape them (escape.go), so a placement is never escaped twice.
type Placement struct {
	// Salt is Salt(Host, Settings.Salts).
	Salt byte
	// Host is HostOf the series' labels: the first of Settings.HostLabels the
	// series has with a non-empty value, "" when it has none of them.
	Host string
	// Metric is the value of __name__, "" when the series has none.
	Metric string
}

// PlacementOf is the placement of the series with labels lbls in a store of
// settings s: the one place the write path and every read path work out a
// series' host, metric and salt. Labels with an empty value count as absent,
// as everywhere (Prometheus treats them so).
func (s Settings) PlacementOf(lbls LabelGetter) Placement {
	host := HostOf(lbls, s.HostLabels)
	return Placement{Salt: Salt(host, s.Salts), Host: host, Metric: lbls.Get(model.MetricNameLabel)}
}

// DataKey is the decoded data row key of the placed series (seriesID) whose
// bucket starts at bucketStart (ms).
func (p Placement) DataKey(seriesID uint64, bucketStart int64) DataKey {
	return DataKey{Salt: p.Salt, Host: p.Host, Metric: p.Metric, SeriesID: seriesID, BucketStart: bucketStart}
}
