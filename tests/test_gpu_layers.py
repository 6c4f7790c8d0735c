"""GPU offload (`[runtime] gpu_layers`): registered, sent to llama.cpp, read back, verified, and refused on a
build that cannot offload (a CPU-only llama-cpp-python accepts n_gpu_layers and silently runs on the CPU)."""
from __future__ import annotations

import pytest
from test_validate import PREREG, _line, assert_names, experiment, refused

from core.errors import BadInput
from models.backends.llama_cpp import LlamaConfig, LlamaCppBackend, differences
from models.files import embedded_model
from models.llama_loader import gpu_layers_offloaded, gpu_offload, load_llama
from models.spec import Runtime
from registration.spec import parse_runtime

CPU_ONLY = pytest.mark.skipif(gpu_offload(), reason="this llama-cpp-python build can offload to a GPU")


@pytest.mark.unit
@pytest.mark.parametrize("value, message", [(-1, "must be >= 0"), ("all", "integer"), (True, "integer"),
                                            (1.5, "integer")])
def test_a_bad_gpu_layers_is_refused_naming_the_field(value, message):
    with pytest.raises(BadInput) as e:
        parse_runtime({"runtime": {"gpu_layers": value}}, "prereg.toml")
    assert e.value.field == "gpu_layers" and message in str(e.value)


@pytest.mark.unit
def test_gpu_layers_defaults_to_none_offloaded():
    assert parse_runtime({}, "prereg.toml").gpu_layers == 0
    assert parse_runtime({"runtime": {"gpu_layers": 12}}, "prereg.toml").gpu_layers == 12


@pytest.mark.unit
def test_the_offload_is_read_from_llama_cpps_load_log():
    """The line a GPU build of llama.cpp prints; a CPU-only build prints none."""
    assert gpu_layers_offloaded(["load_tensors: offloading 12 repeating layers to GPU\n",
                                 "load_tensors: offloaded 12/31 layers to GPU\n"]) == (12, 31)
    assert gpu_layers_offloaded(["load_tensors:   CPU_Mapped model buffer size =    85.82 MiB\n"]) == (0, None)


EFFECTIVE = {"file_type": "MOSTLY_Q8_0", "model_sha256": "x", "chat_template_sha256": "t", "loras": [],
             "lora_max_logit_change": None, "n_threads": 1, "n_threads_batch": 1, "n_ctx": 2048,
             "weight_buffers": ["CPU_Mapped"]}


@pytest.mark.unit
@pytest.mark.parametrize("registered, loaded, offloaded, total, differs", [
    (0, 0, 0, None, False),     # CPU build, nothing asked
    (0, 0, 0, 31, False),       # GPU build, nothing asked
    (8, 8, 8, 31, False),       # as asked
    (99, 99, 31, 31, False),    # more than the model has: all of it
    (8, 8, 0, 31, True),        # asked, loaded with it, nothing offloaded
    (8, 0, 0, 31, True),        # the struct did not carry it
    (8, 8, 0, None, True),      # a build that said nothing about offloading
])
def test_verification_compares_registered_with_loaded_and_offloaded(registered, loaded, offloaded, total, differs):
    from models.backends.base import Generation
    from models.spec import ModelSpec

    eff = {**EFFECTIVE, "gpu_layers": loaded, "gpu_layers_offloaded": offloaded, "gpu_layers_total": total}
    model = ModelSpec(name="m", backend="llama-cpp", source="embedded:smollm2")
    found = [d for d in differences(Generation(), eff, "Q8_0", model, (), Runtime(gpu_layers=registered))
             if d.startswith("gpu_layers")]
    assert bool(found) == differs, found


@pytest.mark.unit
def test_gpu_layers_enter_the_call_key_only_when_used():
    path = str(embedded_model("smollm2"))
    assert "gpu_layers" not in LlamaCppBackend(LlamaConfig(model_path=path)).identity()  # CPU keys unchanged
    assert LlamaCppBackend(LlamaConfig(model_path=path, gpu_layers=4)).identity()["gpu_layers"] == 4


@pytest.mark.integration
def test_a_cpu_load_reads_back_no_offload():
    llm = load_llama(embedded_model("smollm2"), threads=1, n_ctx=256, use_extra_buffers=False)
    try:
        assert int(llm.model_params.n_gpu_layers) == 0
        assert llm.gpu_offloaded[0] == 0
    finally:
        llm.close()


@pytest.mark.integration
@CPU_ONLY
def test_offload_on_a_cpu_only_build_is_refused_before_any_call(tmp_path):
    prereg = PREREG.replace("n_ctx = 2048\n", "n_ctx = 2048\ngpu_layers = 8\n", 1)
    exp = experiment(tmp_path, prereg)
    err = refused(exp, tmp_path)
    assert_names(err, exp / "prereg.toml", _line(prereg, "gpu_layers = 8"), "gpu_layers")
    assert "no GPU support" in err and "gpu_layers = 0" in err


@pytest.mark.integration
@CPU_ONLY
def test_loading_with_offload_on_a_cpu_only_build_is_refused():
    with pytest.raises(BadInput) as e:
        load_llama(embedded_model("smollm2"), threads=1, n_ctx=256, use_extra_buffers=False, gpu_layers=4)
    assert e.value.field == "gpu_layers"


@pytest.mark.unit
def test_every_answer_row_records_the_offload():
    """The row's compact effective settings carry the offload, as they carry the CPU extra buffers."""
    from arms.settings import row_effective

    eff = {**EFFECTIVE, "sent": {"seed": 0}, "gpu_layers": 8, "gpu_layers_offloaded": 8, "gpu_layers_total": 31}
    row = row_effective(eff, 3)
    assert (row["gpu_layers"], row["gpu_layers_offloaded"], row["gpu_layers_total"]) == (8, 8, 31)
