package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrProcFormat is wrapped by errors about /proc files bench cannot parse.
var ErrProcFormat = errors.New("bench: unexpected /proc format")

// procStatusBytes reads one "Key:   123 kB" line of /proc/<pid>/status
// (pid "self" for this process) in bytes. VmHWM is the peak resident set
// size, VmRSS the current one.
func procStatusBytes(pid, key string) (uint64, error) {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, err
	}
	return parseProcStatus(data, key)
}

// parseProcStatus finds key in the text of a /proc/<pid>/status file and
// returns its value in bytes; the kernel writes these sizes in KiB.
func parseProcStatus(data []byte, key string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), key+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%w: %s line %q", ErrProcFormat, key, sc.Text())
		}
		kib, err := strconv.ParseUint(f[0], 10, 54) // KiB<<10 must fit in 64 bits
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %w", ErrProcFormat, key, err)
		}
		return kib << 10, nil
	}
	return 0, fmt.Errorf("%w: no %s line", ErrProcFormat, key)
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuTime returns the user+system CPU time consumed so far by pid, or by
// this process when pid is 0 (from getrusage, which covers every thread).
func cpuTime(pid int) (time.Duration, error) {
	if pid == 0 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0, err
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStat(data)
}

// parseProcStat returns utime+stime from the text of /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may itself contain
// spaces and parentheses, so fields are counted after the last ')':
// state is field 3, utime field 14, stime field 15.
func parseProcStat(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: stat without ')'", ErrProcFormat)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: stat has %d fields after the name", ErrProcFormat, len(f))
	}
	// Bounded so that the sum, in nanoseconds, cannot overflow.
	const maxTicks = 1 << 32
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil || utime > maxTicks || stime > maxTicks {
		return 0, fmt.Errorf("%w: stat times %q %q", ErrProcFormat, f[11], f[12])
	}
	return time.Duration(utime+stime) * (time.Second / clockTicks), nil
}
