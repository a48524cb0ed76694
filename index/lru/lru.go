// Package lru is a bounded map that evicts its least recently used entry: the
// in-memory caches of the series registry and the "already written" sets of the
// write path (index postings, promoted tag columns, metric metadata). It imports
// only the standard library.
package lru

import "sync"

// Cache maps keys to values and holds at most its capacity of them; adding to a
// full cache evicts the entry used least recently. Get, Contains and Add count as
// uses. A Cache of capacity 0 holds nothing: every lookup misses. All methods are
// safe for concurrent use.
//
// Entries live in one slice linked into a list by index (most recently used at
// head), so a cache allocates its slice once as it fills, plus its map, and
// nothing per lookup.
type Cache[K comparable, V any] struct {
	mu       sync.Mutex
	capacity int
	index    map[K]int32
	entries  []entry[K, V]
	head     int32 // most recently used, -1 when empty
	tail     int32 // least recently used, -1 when empty
}

type entry[K comparable, V any] struct {
	key        K
	value      V
	prev, next int32 // -1 at the ends
}

// maxCapacity keeps indices within int32.
const maxCapacity = 1<<31 - 1

// New returns a cache of at most capacity entries; a capacity <= 0 caches nothing.
func New[K comparable, V any](capacity int) *Cache[K, V] {
	capacity = min(max(capacity, 0), maxCapacity)
	return &Cache[K, V]{capacity: capacity, index: make(map[K]int32), head: -1, tail: -1}
}

// Capacity is the most entries the cache holds.
func (c *Cache[K, V]) Capacity() int { return c.capacity }

// Len is the number of entries in the cache.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.index)
}

// Get returns the value of key and marks it used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.index[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.moveToFront(i)
	return c.entries[i].value, true
}

// Contains reports whether key is in the cache and marks it used.
func (c *Cache[K, V]) Contains(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.index[key]
	if ok {
		c.moveToFront(i)
	}
	return ok
}

// Add sets the value of key, marks it used and, if the cache was full and key
// new, evicts the least recently used entry.
func (c *Cache[K, V]) Add(key K, value V) {
	if c.capacity == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.index[key]; ok {
		c.entries[i].value = value
		c.moveToFront(i)
		return
	}
	var i int32
	if len(c.entries) < c.capacity {
		i = int32(len(c.entries))
		c.entries = append(c.entries, entry[K, V]{})
	} else {
		// Reuse the least recently used slot.
		i = c.tail
		c.unlink(i)
		delete(c.index, c.entries[i].key)
	}
	c.entries[i] = entry[K, V]{key: key, value: value, prev: -1, next: -1}
	c.index[key] = i
	c.pushFront(i)
}

// Remove deletes key from the cache. Its slot is reused by a later Add.
func (c *Cache[K, V]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.index[key]
	if !ok {
		return
	}
	delete(c.index, key)
	c.unlink(i)
	var zero entry[K, V]
	c.entries[i] = zero
	// Keep the free slot at the tail end of the list, where Add takes slots from
	// once the slice is full: move the last slice entry into it so that the
	// slice stays dense.
	last := int32(len(c.entries) - 1)
	if i != last {
		c.entries[i] = c.entries[last]
		e := &c.entries[i]
		c.index[e.key] = i
		if e.prev >= 0 {
			c.entries[e.prev].next = i
		} else {
			c.head = i
		}
		if e.next >= 0 {
			c.entries[e.next].prev = i
		} else {
			c.tail = i
		}
	}
	c.entries = c.entries[:last]
}

func (c *Cache[K, V]) unlink(i int32) {
	e := &c.entries[i]
	if e.prev >= 0 {
		c.entries[e.prev].next = e.next
	} else {
		c.head = e.next
	}
	if e.next >= 0 {
		c.entries[e.next].prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (c *Cache[K, V]) pushFront(i int32) {
	e := &c.entries[i]
	e.prev, e.next = -1, c.head
	if c.head >= 0 {
		c.entries[c.head].prev = i
	}
	c.head = i
	if c.tail < 0 {
		c.tail = i
	}
}

func (c *Cache[K, V]) moveToFront(i int32) {
	if c.head == i {
		return
	}
	c.unlink(i)
	c.pushFront(i)
}
