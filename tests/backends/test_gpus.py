from shipyard.backends.local.gpus import cpu_slots, parse_nvidia_smi


def test_nvidia_smi_csv_becomes_one_slot_per_gpu():
    out = "0, NVIDIA A100-SXM4-40GB, GPU-aaaa\n1, NVIDIA A100-SXM4-40GB, GPU-bbbb\n"
    slots = parse_nvidia_smi(out)
    assert [(s.id, s.kind, s.index) for s in slots] == [("gpu0", "gpu", 0), ("gpu1", "gpu", 1)]
    assert "GPU-bbbb" in slots[1].device


def test_garbage_from_nvidia_smi_gives_no_gpu():
    assert parse_nvidia_smi("NVIDIA-SMI has failed because it couldn't communicate") == []


def test_cpu_slots_are_numbered():
    assert [s.id for s in cpu_slots(3)] == ["cpu0", "cpu1", "cpu2"]
