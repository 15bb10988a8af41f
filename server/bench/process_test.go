package bench

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tbench\nVmPeak:\t  999 kB\nVmHWM:\t    1620 kB\nVmRSS:\t    1500 kB\n"
	for key, want := range map[string]uint64{"VmHWM": 1620 << 10, "VmRSS": 1500 << 10} {
		got, err := parseProcStatus([]byte(status), key)
		if err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	for _, bad := range []string{"", "VmHWM:\n", "VmHWM:\tx kB\n", "VmHWM:\t12 MB\n"} {
		if _, err := parseProcStatus([]byte(bad), "VmHWM"); !errors.Is(err, ErrProcFormat) {
			t.Errorf("parseProcStatus(%q) error = %v, want ErrProcFormat", bad, err)
		}
	}
}

func TestProcStatusSelf(t *testing.T) {
	// RSS first: the peak read afterwards is at least that.
	rss, err := procStatusBytes("self", "VmRSS")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	hwm, err := procStatusBytes("self", "VmHWM")
	if err != nil || rss == 0 || hwm < rss {
		t.Fatalf("VmHWM %d, VmRSS %d (%v): want 0 < RSS <= HWM", hwm, rss, err)
	}
}

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and parentheses, utime 250 and stime 50
	// ticks: 3 seconds.
	stat := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1000 0 0\n"
	got, err := parseProcStat([]byte(stat))
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseProcStat = %v, %v; want 3s", got, err)
	}
	if _, err := parseProcStat([]byte("1 (x) S 1 2")); !errors.Is(err, ErrProcFormat) {
		t.Fatalf("short stat error = %v", err)
	}
}

func TestCPUTimeOfSelf(t *testing.T) {
	self, err := cpuTime(0)
	if err != nil {
		t.Fatal(err)
	}
	viaProc, err := cpuTime(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Both read the same counters, at a granularity of a tick; the later
	// read cannot be much smaller.
	if viaProc+20*time.Millisecond < self {
		t.Fatalf("getrusage %v, /proc stat %v", self, viaProc)
	}
}

// FuzzParseProcStatus: never panics; a value it returns is the number on
// the key's line times 1024.
func FuzzParseProcStatus(f *testing.F) {
	f.Add("VmHWM:\t 1620 kB\n", "VmHWM")
	f.Add("Name:\tx\nVmRSS:\t0 kB\n", "VmRSS")
	f.Add("VmHWM: 18014398509481983 kB", "VmHWM")
	f.Fuzz(func(t *testing.T, data, key string) {
		v, err := parseProcStatus([]byte(data), key)
		if err != nil {
			return
		}
		if v%1024 != 0 {
			t.Fatalf("value %d is not whole KiB", v)
		}
		if !strings.Contains(data, fmt.Sprint(v>>10)) {
			t.Fatalf("value %d KiB not in input", v>>10)
		}
	})
}

// FuzzParseProcStat: never panics, never negative.
func FuzzParseProcStat(f *testing.F) {
	f.Add("1 (x) S 1 1 1 0 -1 0 0 0 0 0 5 7 0 0 20 0 1 0 1 0 0")
	f.Add("1 ()) S 1 1 1 0 -1 0 0 0 0 0 4294967296 4294967296 0")
	f.Fuzz(func(t *testing.T, data string) {
		d, err := parseProcStat([]byte(data))
		if err == nil && d < 0 {
			t.Fatalf("negative CPU time %v", d)
		}
	})
}
