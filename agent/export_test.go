package agent

// SwitchOffOwnerAuthForTest lets the external tests (package agent_test)
// run a positive control with the owner's authentication off: mail whose
// From names the owner routes owner whatever its Authentication-Results
// say. Never from a parallel test.
var SwitchOffOwnerAuthForTest = switchOffOwnerAuthForTest
