// Package heapwatch samples the Go heap while something runs, for tests
// and benchmarks that hold memory to a bound: the peak of the heap's
// objects (garbage a collection has not reached yet included) and the
// peak of what collections found live.
package heapwatch

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// Peaks are the largest values seen, in bytes, above where the heap stood
// when watching began.
type Peaks struct {
	Heap uint64 // the heap's objects, collected or not
	Live uint64 // what the last collection found live
}

// Start collects garbage, then samples the heap every millisecond until
// the returned function is called; that function returns the peaks.
func Start() (stop func() Peaks) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	baseHeap, baseLive := sample[0].Value.Uint64(), sample[1].Value.Uint64()
	var p Peaks
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			if v := sample[0].Value.Uint64(); v > baseHeap {
				p.Heap = max(p.Heap, v-baseHeap)
			}
			if v := sample[1].Value.Uint64(); v > baseLive {
				p.Live = max(p.Live, v-baseLive)
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() Peaks {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return p
	}
}

// Peak runs fn and returns how far the heap's objects rose above where
// they stood before.
func Peak(fn func()) uint64 {
	stop := Start()
	fn()
	return stop().Heap
}
