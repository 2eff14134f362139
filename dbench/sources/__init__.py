"""Graph sources: where the graphs of a run come from (the DeepBench catalog or a kernel file built in
memory, a gen folder and its manifest, a bundle, a folder of foreign .onnx files, one model), each
resolved here into the same Items, so the orchestrator runs them without knowing which kind it got."""
