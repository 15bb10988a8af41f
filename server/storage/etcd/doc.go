// Package etcd stores objects in etcd v3: a storage.Interface over a
// clientv3 client, an embedded single-member etcd, a client for an
// external cluster, and the periodic compactor.
//
// There are only a few types: Store (the storage.Interface), Embedded (a
// member running in this process), Config (how to reach an external
// cluster) and Compactor (history trimming shared by several servers).
//
// # Basics
//
//	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: dataDir})
//	defer e.Close()
//	s := etcd.New(e.Client(), etcd.WithRegisterer(reg))
//
// or, for an external cluster, etcd.NewClient(etcd.Config{Endpoints: …,
// CAFile: …, CertFile: …, KeyFile: …}) and etcd.New on the result.
//
// Every write is one etcd transaction guarded by a revision compare:
// Create requires create revision 0, Update and Delete the expected mod
// revision. A value is stored as given and returned with
// metadata.resourceVersion set to its mod revision (for deletes, the
// delete's revision), so values in etcd never carry a resourceVersion.
//
// A Watcher is pull-style: Next hands out the events of one etcd watch
// response at a time; there is no goroutine per watch beyond clientv3's
// own, and Close cancels the watch.
//
// The embedded member is private to the process that starts it: it
// listens on loopback only, its client and peer listeners require TLS
// client certificates of a CA generated for it in its directory (0700,
// keys 0600, reused on restart), and an flock on Dir/listwatch.lock keeps a
// second member (from any process) off the directory: that one fails at
// once with ErrDataDirInUse instead of waiting for ever on etcd's database
// lock.
//
// # Caveats
//
//   - etcd cannot be interrupted while it opens its files. If ctx ends
//     first, StartEmbedded returns at once and leaves a goroutine to stop
//     the member when it has started; the directory stays locked until
//     then.
//   - A compacted range read reports *storage.CompactedError with
//     Compacted = 0: etcd does not say how far it compacted. A compacted
//     watch reports the real number.
//   - Progress notifications and RequestProgress travel on the gRPC
//     stream that clientv3 picks by the context's outgoing metadata; this
//     package gives every watch and progress request the same metadata,
//     so RequestProgress reaches every watch of the client, except those
//     made with a watch stream name (storage.WithWatchStream): they get
//     a stream per name. etcd answers a progress request only when every
//     watch of the stream is synced and starts at or below its revision:
//     a watch just opened at the current revision + 1 blocks progress
//     for its whole stream until the next write.
//   - Several Compactors (one per server) may share an etcd: they agree
//     through the version of "compact_rev_key", as kube-apiservers do, and
//     only one of them compacts per interval.
package etcd
