package main

// registerWriteFlags binds the limits of the write endpoints (/api/v1/write,
// /api/put): the HTTP side (promapi.WriteLimits) and what one request may carry
// (write.Limits).
func (o *serveOptions) registerWriteFlags() {
	b, h, l := o.flags, &o.http.WriteLimits, &o.writeLimits
	bytesFlag(b, "write.max-body-bytes", "promapi: WriteLimits.MaxBodyBytes", "Largest write request body as sent "+
		"(snappy- or gzip-compressed); larger is answered 413 before it is read.", &h.MaxBodyBytes)
	bytesFlag(b, "write.max-decompressed-bytes", "promapi: WriteLimits.MaxDecompressedBytes", "Largest write request "+
		"body once decompressed; larger is answered 400 before it is decoded.", &h.MaxDecompressedBytes)
	b.int("write.max-concurrent-requests", "promapi: WriteLimits.MaxConcurrentRequests", "Write requests decoded and "+
		"written at once; a request takes its slot once its whole body has arrived, and one more is answered 429 "+
		"with Retry-After.", &h.MaxConcurrentRequests)
	bytesFlag(b, "write.max-inflight-bytes", "promapi: WriteLimits.MaxInflightBytes", "Bytes of write request bodies "+
		"held at once across all requests, as received and decompressed; a request whose bytes do not fit is "+
		"answered 429 with Retry-After. At least --write.max-body-bytes + --write.max-decompressed-bytes.",
		&h.MaxInflightBytes)
	b.duration("write.body-read-timeout", "promapi: WriteLimits.BodyReadTimeout", "Longest a write request's body "+
		"may take to arrive, once its headers have; slower is answered 408 and the connection closed.",
		&h.BodyReadTimeout)
	b.int("write.max-series-per-request", "write: Limits.MaxSeriesPerRequest", "Most series in one write request; "+
		"over it the request is rejected whole (400). 0: no limit.", &l.MaxSeriesPerRequest)
	b.int("write.max-samples-per-request", "write: Limits.MaxSamplesPerRequest", "Most samples in one write request; "+
		"over it the request is rejected whole (400). Native histogram samples count too. 0: no limit.", &l.MaxSamplesPerRequest)
	b.int("write.max-native-histogram-buckets", "write: Limits.MaxHistogramBuckets", "Most buckets of one native "+
		"histogram sample; one with more is stored at the highest resolution at which it fits, and rejected when "+
		"even schema -4 is over or its buckets are custom. 0: no limit.", &l.MaxHistogramBuckets)
	b.int("write.max-labels-per-series", "write: Limits.MaxLabelsPerSeries", "Most labels (with __name__) of one "+
		"series; a series over it is rejected. 0: no limit.", &l.MaxLabelsPerSeries)
	b.int("write.max-label-name-length", "write: Limits.MaxLabelNameLength", "Longest label name in bytes; a series "+
		"over it is rejected. 0: no limit.", &l.MaxLabelNameLength)
	b.int("write.max-label-value-length", "write: Limits.MaxLabelValueLength", "Longest label value in bytes; a "+
		"series over it is rejected. 0: no limit.", &l.MaxLabelValueLength)
	b.duration("write.max-future-skew", "write: Limits.MaxFutureSkew", "Samples further than this ahead of the "+
		"server's clock are rejected. Samples older than --retention.raw are rejected too: they would expire at once.",
		&l.MaxFutureSkew)
}
