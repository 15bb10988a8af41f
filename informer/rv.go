package informer

import "strconv"

// newerRV reports whether resourceVersion rv is newer than last.
//
// Kubernetes declares resourceVersions opaque, but kube-apiserver and
// listwatch's server both use etcd revisions, which are strictly
// increasing integers. So when both parse as unsigned integers they are
// compared; when either does not (another server, or no RV yet) rv counts
// as newer, and the reflector behaves like client-go, which never compares.
func newerRV(rv, last string) bool {
	if last == "" {
		return true
	}
	a, errA := strconv.ParseUint(rv, 10, 64)
	b, errB := strconv.ParseUint(last, 10, 64)
	if errA != nil || errB != nil {
		return true
	}
	return a > b
}
