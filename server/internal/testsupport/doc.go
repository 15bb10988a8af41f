// Package testsupport holds, in its subdirectories, the harnesses that
// exist only for listwatch's own tests, benchmarks and reliability suites,
// apart from the production code:
//
//   - etcdcluster: a multi-member etcd cluster of separate processes that
//     tests can kill -9 and restart;
//   - etcdmember: the etcd member binary etcdcluster runs (etcd's own main);
//   - faultproxy: a TCP proxy that injects drops, stalls and truncation;
//   - kubeapiserver: a real kube-apiserver with its own etcd, for side by
//     side checks against Kubernetes.
//
// They sit under internal/ so that they are no part of the module's API.
// The public test helpers for library users stay beside the packages they
// serve, as net/http/httptest does: apiserver/apiservertest (an in-process
// listwatch server) and storage/etcdtest (an embedded etcd with a Store).
package testsupport
