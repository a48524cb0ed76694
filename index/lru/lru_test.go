package lru_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/hbtsdb/hbtsdb/index/lru"
)

func TestTheLeastRecentlyUsedEntryIsEvicted(t *testing.T) {
	c := lru.New[string, int](2)
	c.Add("a", 1)
	c.Add("b", 2)
	if v, ok := c.Get("a"); !ok || v != 1 { // a is now the most recent
		t.Fatalf("Get(a) = %d, %v", v, ok)
	}
	c.Add("c", 3) // evicts b
	if c.Contains("b") {
		t.Errorf("b was used least recently but was kept")
	}
	for k, want := range map[string]int{"a": 1, "c": 3} {
		if v, ok := c.Get(k); !ok || v != want {
			t.Errorf("Get(%s) = %d, %v; want %d", k, v, ok, want)
		}
	}
	c.Add("a", 10) // an update does not evict
	if v, _ := c.Get("a"); v != 10 || c.Len() != 2 || !c.Contains("c") {
		t.Errorf("after updating a: a=%d, len %d, has c %v", v, c.Len(), c.Contains("c"))
	}
}

func TestAZeroCapacityCacheHoldsNothing(t *testing.T) {
	for _, capacity := range []int{0, -5} {
		c := lru.New[int, int](capacity)
		c.Add(1, 1)
		if c.Contains(1) || c.Len() != 0 {
			t.Errorf("capacity %d: cache holds an entry", capacity)
		}
	}
}

func TestRemoveFreesASlot(t *testing.T) {
	c := lru.New[int, int](3)
	for i := range 3 {
		c.Add(i, i)
	}
	c.Remove(0)
	c.Remove(7) // absent: no-op
	c.Add(3, 3)
	for _, k := range []int{1, 2, 3} {
		if !c.Contains(k) {
			t.Errorf("key %d lost after removing another", k)
		}
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d, want 3", c.Len())
	}
}

// TestAgainstAModel compares random operations with a simple model of an LRU.
func TestAgainstAModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const capacity = 8
	c := lru.New[int, int](capacity)
	var order []int // least recently used first
	model := map[int]int{}
	touch := func(k int) {
		for i, o := range order {
			if o == k {
				order = append(order[:i], order[i+1:]...)
				break
			}
		}
		order = append(order, k)
	}
	for step := range 20000 {
		k := r.IntN(20)
		switch r.IntN(4) {
		case 0, 1:
			v, ok := c.Get(k)
			mv, mok := model[k]
			if ok != mok || v != mv {
				t.Fatalf("step %d: Get(%d) = %d, %v; model %d, %v", step, k, v, ok, mv, mok)
			}
			if ok {
				touch(k)
			}
		case 2:
			c.Add(k, step)
			if _, ok := model[k]; !ok && len(model) == capacity {
				delete(model, order[0])
				order = order[1:]
			}
			model[k] = step
			touch(k)
		case 3:
			c.Remove(k)
			if _, ok := model[k]; ok {
				delete(model, k)
				for i, o := range order {
					if o == k {
						order = append(order[:i], order[i+1:]...)
						break
					}
				}
			}
		}
		if c.Len() != len(model) {
			t.Fatalf("step %d: Len = %d, model %d", step, c.Len(), len(model))
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	c := lru.New[int, int](64)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 10000 {
				k := (i * (g + 1)) % 200
				c.Add(k, k)
				if v, ok := c.Get(k); ok && v != k {
					t.Errorf("Get(%d) = %d", k, v)
					return
				}
			}
		})
	}
	wg.Wait()
	if c.Len() > 64 {
		t.Errorf("Len = %d over the capacity", c.Len())
	}
}

func BenchmarkGetHit(b *testing.B) {
	c := lru.New[uint64, uint64](1 << 16)
	for i := range uint64(1 << 16) {
		c.Add(i, i)
	}
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		c.Get(i & (1<<16 - 1))
		i += 7
	}
}
