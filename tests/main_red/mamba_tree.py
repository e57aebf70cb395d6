"""A job file written the way vLLM writes its test areas, for the culprit search's tests.

Steps start at the file's left edge under ``steps:``; the first has no ``key:`` (Buildkite
knows it by the generator's derived key) and directory dependencies with and without
their trailing ``/``; the second excludes one file under a directory it depends on; the
third is keyless with a label the derived key has to clean up. The file-level
``depends_on`` makes the generator count an edit of this file for each of its steps.
"""

from __future__ import annotations

MAMBA_FILE = ".buildkite/test_areas/mamba.yaml"
LAYERS_LABEL = "Mamba Layers Test"
LAYERS_KEY = "mamba-layers-test"  # what the generator derives from the label
SSD_KEY = "mamba-ssd-ops"
HYBRID_KEY = "spec-decode-mtp-hybrid-b200"
SSD_DIR = "vllm/model_executor/layers/mamba/ops"
SSD_README = f"{SSD_DIR}/README.md"  # excluded by the SSD step
SSD_KERNEL = f"{SSD_DIR}/ssd_combined.py"
LAYERS_DEPENDENCIES = ("csrc/mamba/", "vllm/model_executor/layers/mamba/", "tests/kernels/mamba")
SSD_DEPENDENCIES = (f"{SSD_DIR}/", f"!{SSD_README}", "tests/kernels/mamba/test_ssd.py")

MAMBA_JOBS = f"""\
group: Mamba
depends_on:
  - image-build
steps:
- label: {LAYERS_LABEL}
  timeout_in_minutes: 45
  source_file_dependencies:
  - csrc/mamba/
  - vllm/model_executor/layers/mamba/
  - tests/kernels/mamba
  commands:
    - pytest -v -s kernels/mamba

- label: Mamba SSD Ops
  key: {SSD_KEY}
  timeout_in_minutes: 30
  source_file_dependencies:
    - {SSD_DIR}/
    - "!{SSD_README}"
    - tests/kernels/mamba/test_ssd.py
  commands:
    - pytest -v -s kernels/mamba/test_ssd.py

- label: Spec Decode MTP hybrid (B200)
  timeout_in_minutes: 30
  device: b200
  optional: true
  source_file_dependencies:
    - vllm/v1/spec_decode/
    - vllm/model_executor/models/qwen3_5_mtp.py
  commands:
    - pytest -v -s v1/e2e/spec_decode -k "qwen3_5-hybrid"
"""
