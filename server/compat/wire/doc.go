// Package wire holds the tests of the library's wire package that need
// k8s.io/apimachinery's serializers as an oracle; see package compat.
package wire
