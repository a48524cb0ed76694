package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/promapi"
)

// readyDB is the server's database as the endpoints see it: absent until the
// store is open and its schema checked, with the reason it is not ready
// meanwhile. Its DB method is the promapi.Provider of every endpoint.
type readyDB struct {
	mu      sync.Mutex
	db      *db.DB
	waiting error // why there is no db yet; nil while the first attempt runs
	closed  bool
}

// DB is the DB once it is open, and until then an error wrapping
// kv.ErrUnavailable that says why not (503, so that clients retry).
func (r *readyDB) DB() (promapi.DB, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.db != nil:
		return r.db, nil
	case r.closed:
		return nil, fmt.Errorf("the server is stopping: %w", kv.ErrClosed)
	case r.waiting != nil:
		return nil, r.waiting
	default:
		return nil, fmt.Errorf("%w: the store is being opened", kv.ErrUnavailable)
	}
}

// set makes d the DB the endpoints serve from. It returns false, keeping
// nothing, once close was called: the caller then closes d.
func (r *readyDB) set(d *db.DB) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.db, r.waiting = d, nil
	return true
}

// wait records why there is no DB yet; reason should wrap kv.ErrUnavailable.
func (r *readyDB) wait(reason error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !errors.Is(reason, kv.ErrUnavailable) {
		reason = fmt.Errorf("%w: %w", kv.ErrUnavailable, reason)
	}
	r.waiting = reason
}

// close closes the DB (and so the store), if it was opened; a DB set after
// close is refused (see set).
func (r *readyDB) close() error {
	r.mu.Lock()
	d := r.db
	r.db, r.closed = nil, true
	r.mu.Unlock()
	if d == nil {
		return nil
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("close the database: %w", err)
	}
	return nil
}

// openDB is the DB once the store is open, else nil.
func (r *readyDB) openDB() *db.DB {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.db
}
