// Package kubeapiserver runs a real kube-apiserver for tests and
// benchmarks, so that listwatch's client library can be measured and
// checked side by side against Kubernetes itself.
//
// The binary is not part of the module: server/tools/kube/build.sh builds it into
// .cache/kube/bin/kube-apiserver, and $LISTWATCH_KUBE_APISERVER may point
// at another one. Start runs, in a private temporary directory:
//
//   - an etcd member embedded in this process (storage/etcd), listening on
//     loopback with mutual TLS: only a holder of its generated client
//     certificate (this process and the kube-apiserver) can reach it;
//   - the kube-apiserver as a child process in its own process group, on a
//     free 127.0.0.1 port, with a generated serving certificate and CA,
//     a service-account signing key, client-certificate and static-token
//     authentication, RBAC, and anonymous requests turned off;
//   - an admin kubeconfig (user admin, group system:masters, token and
//     client certificate) and a token for an ordinary user.
//
// Close stops the process group and the etcd member and removes the
// directory. Nothing here is meant for production: the point is a
// throw-away server that starts fast.
package kubeapiserver
