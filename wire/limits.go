package wire

// MaxRequestBodyBytes is kube-apiserver's default limit on a request body,
// 3 MiB (its server config's MaxRequestBodyBytes). It is the one
// definition of the limit: the server's body filter defaults to it, and
// storage sizes etcd's requests so that any object it admits fits.
const MaxRequestBodyBytes = 3 << 20
