// Command etcd-member is etcd's own main, built from the etcd server module
// listwatch already depends on. The reliability suites run it as separate
// processes to form a 3-member cluster on loopback ports that they can
// kill -9 one member at a time; it is not part of the listwatch product.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
