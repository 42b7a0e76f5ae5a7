package mcp

import (
	"testing"

	"github.com/mailagent/mailagent/internal/rig/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }
