package natsstore

import (
	"fmt"
	"sync"
	"testing"
)

// TestSharedIsOneValueForAll: servers asking at once for the fleet's
// value all get the one the first made; a session listing ignores it.
func TestSharedIsOneValueForAll(t *testing.T) {
	st := storeMaker(t, 0)(t).(*Store)
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := st.Shared("http-token", func() (string, error) { return fmt.Sprint("token-", i), nil })
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	for _, v := range got {
		if v != got[0] || v == "" {
			t.Fatalf("servers got %q", got)
		}
	}
	if list, err := st.List(); err != nil || len(list) != 0 {
		t.Fatalf("List = %v, %v; want no sessions", list, err)
	}
	if _, err := st.Shared("a.b", nil); err == nil {
		t.Fatal("a name with a dot was taken")
	}
}
