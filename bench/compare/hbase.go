package main

import "time"

// hbaseRound is what one round of a tsdb (HBase) server cost its HBase.
type hbaseRound struct {
	jvmCPU     time.Duration // HBase JVM CPU from the first request to the last answer
	jvmCPUIdle time.Duration // until tsdb and then the JVM went idle after the ingest
	jvmSettled bool
	walBytes   int64 // WAL bytes written from before the ingest until idle
	tableBytes int64 // the round's tables after a flush and major compaction
	tables     int
}
