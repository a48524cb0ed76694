package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"

	"github.com/hbtsdb/hbtsdb/internal/atomicfile"
)

// Checkpoint is the record of what an import has durably written, kept in a
// JSON file that is replaced atomically (written beside it, fsynced, renamed)
// at every step, so that a kill at any moment leaves either the previous or
// the next state. Job names the import (input file and size, or source URL,
// selectors and time range): a checkpoint of another job is refused.
type Checkpoint struct {
	path string
	mu   sync.Mutex
	st   checkpointState
}

type checkpointState struct {
	Job string `json:"job"`
	// Offset: a file import's byte offset before which every sample is stored.
	Offset int64 `json:"offset,omitempty"`
	// Slices: a remote-read import's finished slices, sorted.
	Slices []int `json:"slices,omitempty"`
	// Complete: the whole import is done.
	Complete bool `json:"complete,omitempty"`
}

// ErrCheckpointMismatch is returned by OpenCheckpoint for a checkpoint file
// that records another import.
var ErrCheckpointMismatch = errors.New("checkpoint belongs to another import")

// OpenCheckpoint reads the checkpoint at path for job, or starts an empty one
// when there is no such file. A file of another job is an error wrapping
// ErrCheckpointMismatch that names both jobs.
func OpenCheckpoint(path, job string) (*Checkpoint, error) {
	c := &Checkpoint{path: path, st: checkpointState{Job: job}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("importer: checkpoint: %w", err)
	}
	var st checkpointState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("importer: checkpoint %s is not a checkpoint (%v): delete it to start over", path, err)
	}
	if st.Job != job {
		return nil, fmt.Errorf("importer: %w: %s records %q, this import is %q: delete it to start over, or give "+
			"another --checkpoint", ErrCheckpointMismatch, path, st.Job, job)
	}
	c.st = st
	return c, nil
}

// Path is the checkpoint's file.
func (c *Checkpoint) Path() string { return c.path }

// Offset is a file import's resume offset (0: from the start).
func (c *Checkpoint) Offset() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.Offset
}

// Complete reports whether the checkpoint records a finished import.
func (c *Checkpoint) Complete() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.Complete
}

// SliceDone reports whether slice i of a remote-read import is done.
func (c *Checkpoint) SliceDone(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := slices.BinarySearch(c.st.Slices, i)
	return ok
}

// SetOffset records that every sample before offset is stored.
func (c *Checkpoint) SetOffset(offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.Offset = offset
	return c.saveLocked()
}

// AddSlice records that slice i is stored.
func (c *Checkpoint) AddSlice(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := slices.BinarySearch(c.st.Slices, i); !ok {
		c.st.Slices = slices.Insert(c.st.Slices, j, i)
	}
	return c.saveLocked()
}

// SetComplete records that the whole import is stored.
func (c *Checkpoint) SetComplete() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.Complete = true
	return c.saveLocked()
}

// saveLocked replaces the file atomically (atomicfile.Write).
func (c *Checkpoint) saveLocked() error {
	b, err := json.Marshal(c.st)
	if err != nil {
		return fmt.Errorf("importer: checkpoint: %w", err)
	}
	if err := atomicfile.Write(c.path, append(b, '\n')); err != nil {
		return fmt.Errorf("importer: checkpoint: %w", err)
	}
	return nil
}
