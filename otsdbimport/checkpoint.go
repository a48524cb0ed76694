package otsdbimport

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/hbtsdb/hbtsdb/importer"
)

// Checkpoint records the key spans of OpenTSDB's data table whose points are
// all stored, in a JSON file replaced atomically at every step,
// so that a kill at any moment leaves the previous or the next state (the
// file format of importer's checkpoints, with spans for slices). Its job
// names the import (source, tables, layout): a checkpoint of another job is
// refused. It is safe for concurrent use.
type Checkpoint struct {
	path string
	mu   sync.Mutex
	job  string
	done spanSet
	// complete: every range was imported.
	complete bool
}

// checkpointFile is the file's JSON: done spans as [start, stop] in hex, ""
// for the table's first key or its end.
type checkpointFile struct {
	Job      string      `json:"job"`
	Done     [][2]string `json:"done,omitempty"`
	Complete bool        `json:"complete,omitempty"`
}

// OpenCheckpoint reads the checkpoint at path for job, or starts an empty one
// when there is no such file. A file of another job is an error wrapping
// importer.ErrCheckpointMismatch that names both jobs.
func OpenCheckpoint(path, job string) (*Checkpoint, error) {
	c := &Checkpoint{path: path, job: job}
	var f checkpointFile
	if found, err := importer.ReadCheckpointFile(path, job, &f); err != nil || !found {
		return c, err
	}
	for _, d := range f.Done {
		start, err1 := hex.DecodeString(d[0])
		stop, err2 := hex.DecodeString(d[1])
		if err := errors.Join(err1, err2); err != nil || (len(stop) > 0 && string(start) >= string(stop)) {
			return nil, fmt.Errorf("otsdbimport: checkpoint %s: the span %q..%q is not a key range: delete it to start over",
				path, d[0], d[1])
		}
		if len(start) == 0 {
			start = nil
		}
		if len(stop) == 0 {
			stop = nil
		}
		c.done = c.done.add(span{start, stop})
	}
	c.complete = f.Complete
	return c, nil
}

// Path is the checkpoint's file.
func (c *Checkpoint) Path() string { return c.path }

// Complete reports whether the checkpoint records a finished import.
func (c *Checkpoint) Complete() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.complete
}

// doneSpans is a copy of the spans recorded as stored.
func (c *Checkpoint) doneSpans() spanSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(spanSet(nil), c.done...)
}

// addDone records that every point of the rows in sp is stored.
func (c *Checkpoint) addDone(sp span) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = c.done.add(sp)
	return c.saveLocked()
}

// setComplete records that the whole import is stored.
func (c *Checkpoint) setComplete() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.complete = true
	return c.saveLocked()
}

func (c *Checkpoint) saveLocked() error {
	f := checkpointFile{Job: c.job, Complete: c.complete}
	for _, d := range c.done {
		f.Done = append(f.Done, [2]string{hex.EncodeToString(d.start), hex.EncodeToString(d.stop)})
	}
	return importer.WriteCheckpointFile(c.path, f)
}
