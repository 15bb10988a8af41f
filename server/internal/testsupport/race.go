//go:build race

package testsupport

const raceEnabled = true
