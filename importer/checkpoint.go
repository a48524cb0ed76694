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
	if _, err := ReadCheckpointFile(path, job, &c.st); err != nil {
		return nil, err
	}
	return c, nil
}

// ReadCheckpointFile reads the checkpoint file at path into state, a pointer
// to a struct whose JSON holds the job it records as "job", for an import
// of job; found is false when there is no such file (state is then left as
// it is). A file that is not such JSON, or of another job (an error wrapping
// ErrCheckpointMismatch that names both), is an error that says what to do.
// It is the file format of every import's checkpoint, importers of other
// sources (otsdbimport) included.
func ReadCheckpointFile(path, job string, state any) (found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("importer: checkpoint: %w", err)
	}
	var head struct {
		Job string `json:"job"`
	}
	err = json.Unmarshal(b, &head)
	if err == nil {
		err = json.Unmarshal(b, state)
	}
	if err != nil {
		return false, fmt.Errorf("importer: checkpoint %s is not a checkpoint (%v): delete it to start over", path, err)
	}
	if head.Job != job {
		return false, fmt.Errorf("importer: %w: %s records %q, this import is %q: delete it to start over, or give "+
			"another --checkpoint", ErrCheckpointMismatch, path, head.Job, job)
	}
	return true, nil
}

// WriteCheckpointFile replaces the checkpoint file at path with state as
// JSON, atomically (atomicfile.Write).
func WriteCheckpointFile(path string, state any) error {
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("importer: checkpoint: %w", err)
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("importer: checkpoint: %w", err)
	}
	return nil
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

// saveLocked replaces the file atomically.
func (c *Checkpoint) saveLocked() error { return WriteCheckpointFile(c.path, c.st) }
