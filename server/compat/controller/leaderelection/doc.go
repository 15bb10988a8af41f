// Package leaderelection holds the tests of the library's
// controller/leaderelection package that need k8s.io/api as an oracle; see
// package compat.
package leaderelection
