package bench

import "time"

// SchemaVersion names the JSON schema of Result. It changes only when a
// field is removed or changes meaning; new fields may appear without a
// change, so readers must ignore fields they do not know.
const SchemaVersion = "listwatch.bench/v1"

// Result is what every subcommand prints with --json: one JSON object,
// with the sections of the benchmarks that ran and the others omitted.
type Result struct {
	Schema string `json:"schema"` // SchemaVersion
	// Target describes the server measured.
	Target TargetInfo `json:"target"`
	// Started is when the run began (RFC 3339).
	Started time.Time `json:"started"`
	// GoMaxProcs and NumCPU describe the measuring machine.
	GoMaxProcs int `json:"goMaxProcs"`
	NumCPU     int `json:"numCPU"`

	List     *ListResult     `json:"list,omitempty"`
	Informer *InformerResult `json:"informer,omitempty"`
	Watch    *WatchResult    `json:"watch,omitempty"`
	Queue    *QueueResult    `json:"queue,omitempty"`
	Write    *WriteResult    `json:"write,omitempty"`
}

// TargetInfo says which server was measured.
type TargetInfo struct {
	// Embedded is true when bench started its own listwatch server
	// in-process (no --kubeconfig).
	Embedded bool   `json:"embedded"`
	Host     string `json:"host"`
	// ServerVersion is /version's gitVersion, when the server answers it.
	ServerVersion string `json:"serverVersion,omitempty"`
}

// ListResult is the output of "bench list".
type ListResult struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	// Objects is how many objects a full list returned (the first
	// repetition of the first case).
	Objects int `json:"objects"`
	Repeat  int `json:"repeat"`
	// Encoding is what the pages were asked for in: "json" or "protobuf".
	Encoding string `json:"encoding,omitempty"`
	// Cases has one entry per (page size, resourceVersion mode), in the
	// order they ran.
	Cases []ListCase `json:"cases"`
}

// ListCase is one (page size, resourceVersion mode) of "bench list".
type ListCase struct {
	// PageSize is the limit sent; 0 means no limit parameter (unpaged).
	PageSize int64 `json:"pageSize"`
	// RVMode is the resourceVersion sent with the first page: "" (unset:
	// a consistent read) or "0" (any version; kube-apiserver serves it
	// from its watch cache).
	RVMode string `json:"rvMode"`
	// Page is the latency of each page request, from sending it to
	// having read the whole body; FullList of each complete list, the sum
	// of its pages' latencies (bench's decoding between pages excluded).
	Page     Latency `json:"page"`
	FullList Latency `json:"fullList"`
	// PagesPerList and ItemsPerList are of the last repetition;
	// BytesPerList is the mean of the decoded (uncompressed) body bytes.
	PagesPerList int   `json:"pagesPerList"`
	ItemsPerList int   `json:"itemsPerList"`
	BytesPerList int64 `json:"bytesPerList"`
	// MaxPageItems is the largest page seen.
	MaxPageItems int `json:"maxPageItems"`
	// LimitHonoured is false when some page held more than PageSize
	// items: the server ignored limit. Always true for PageSize 0.
	LimitHonoured bool `json:"limitHonoured"`
}

// InformerResult is the output of "bench informer".
type InformerResult struct {
	Namespace string `json:"namespace"`
	// Runs has one entry per (object count, implementation), each
	// measured in its own child process.
	Runs []InformerRun `json:"runs"`
}

// InformerRun is one child process's measurement; it is also the JSON
// line the child prints.
type InformerRun struct {
	Impl    string `json:"impl"`
	Objects int    `json:"objects"`
	// Listed is how many objects the informer had delivered to its
	// handler when it reported synced; the parent checks it equals
	// Objects.
	Listed int `json:"listed"`
	// SyncMs is from starting the informer to HasSynced.
	SyncMs float64 `json:"syncMs"`
	// HeapAfterSyncBytes is the live heap after a forced GC once synced.
	HeapAfterSyncBytes uint64 `json:"heapAfterSyncBytes"`
	// RSSAfterSyncBytes is VmRSS once synced; PeakRSSBytes is VmHWM at
	// the end of the run, after the update burst.
	RSSAfterSyncBytes uint64 `json:"rssAfterSyncBytes"`
	PeakRSSBytes      uint64 `json:"peakRSSBytes"`
	// Updates is the size of the burst applied after sync; EventsPerSec
	// is Updates divided by the time from the burst's first write to the
	// child seeing the last update. WriteMs is how long the writer took,
	// so a reader can tell when the writes, not the informer, were the
	// bottleneck.
	Updates      int     `json:"updates"`
	EventsPerSec float64 `json:"eventsPerSec"`
	WriteMs      float64 `json:"writeMs"`
	// Fixture is the kind of objects measured: "configmaps" or "pods".
	Fixture string `json:"fixture,omitempty"`
	// ReplayMisses, for a run against a replay (Impl ends with
	// ReplaySuffix), is how many of its requests nothing recorded
	// matched, so the real server answered them; 0 when the whole run
	// was replayed.
	ReplayMisses int64 `json:"replayMisses,omitempty"`
	// The relist measurement ("bench informer --relist"): after the
	// update burst the child makes the informer's watch end with 410
	// Expired, so it lists everything again, and samples memory every
	// 2 ms from just before that until the list has arrived and as long
	// again (at least 2 s). HeapBeforeRelistBytes is the live heap after
	// a forced GC just before (the steady heap); RelistPeakHeapBytes the
	// peak of heap object bytes, collected or not (it depends on GOGC as
	// much as on the informer); RelistPeakLiveHeapBytes the peak of the
	// live heap as marked by each GC during the relist (what the
	// informer holds; equal to the steady heap when no GC ran);
	// RelistPeakRSSBytes the peak VmRSS sampled; RelistMs from the
	// trigger to the last page (or the end bookmark of a streaming
	// list); RelistGCs how many GCs ran.
	HeapBeforeRelistBytes   uint64  `json:"heapBeforeRelistBytes,omitempty"`
	RelistPeakHeapBytes     uint64  `json:"relistPeakHeapBytes,omitempty"`
	RelistPeakLiveHeapBytes uint64  `json:"relistPeakLiveHeapBytes,omitempty"`
	RelistPeakRSSBytes      uint64  `json:"relistPeakRSSBytes,omitempty"`
	RelistMs                float64 `json:"relistMs,omitempty"`
	RelistGCs               int     `json:"relistGCs,omitempty"`
	// Error is set when the child failed; the other fields are then
	// partial.
	Error string `json:"error,omitempty"`
}

// WatchResult is the output of "bench watch".
type WatchResult struct {
	Namespace string `json:"namespace"`
	Watchers  int    `json:"watchers"`
	Writes    int    `json:"writes"`
	// Delivered counts events received over all watchers; it equals
	// Watchers*Writes when nothing was lost.
	Delivered int `json:"delivered"`
	// Lag is from a write's response to each watcher's receipt of its
	// event. An event read before the writer had parsed the response
	// counts as zero.
	Lag Latency `json:"lag"`
	// DurationMs is from the first write to the last delivery.
	DurationMs float64 `json:"durationMs"`
	// ServerCPUMs is the CPU time the server used during the run;
	// ServerCPUScope says what was measured: "process" (embedded server:
	// this whole process, watchers included), "pid" (--server-pid) or
	// "" (unknown, ServerCPUMs is 0).
	ServerCPUMs    float64 `json:"serverCPUMs"`
	ServerCPUScope string  `json:"serverCPUScope"`
}

// QueueResult is the output of "bench queue", ours and client-go's.
type QueueResult struct {
	Producers int          `json:"producers"`
	Workers   int          `json:"workers"`
	Keys      int          `json:"keys"`
	Adds      int          `json:"adds"`
	Queued    int          `json:"queued"` // backlog for the Add latency
	Impls     []QueueStats `json:"impls"`
}

// QueueStats is one queue implementation's figures.
type QueueStats struct {
	Impl string `json:"impl"` // "listwatch" or "client-go"
	// AddsPerSec is Adds over the time until every add was processed,
	// in the median of QueueOptions.Rounds rounds; Processed counts that
	// round's Get/Done pairs (fewer than Adds: an Add of a key already
	// queued is merged, so the count depends on how fast workers keep
	// up, and is not a figure of merit).
	AddsPerSec float64 `json:"addsPerSec"`
	Processed  int     `json:"processed"`
	// AddLatency is per Add of a new key onto a queue holding Queued
	// items.
	AddLatency Latency `json:"addLatency"`
}
