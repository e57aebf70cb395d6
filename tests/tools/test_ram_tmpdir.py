"""The choice of a RAM-backed directory for the suite's temporary files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.ram_tmpdir import MIN_FREE_BYTES, choose, file_system_of, main

MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
tmpfs /run/user/1000 tmpfs rw,nosuid 0 0
/dev/vdb /srv/with\\040space xfs rw 0 0
"""
SHM = Path("/dev/shm")
PLENTY = MIN_FREE_BYTES


def test_the_longest_mount_point_above_a_path_names_its_file_system() -> None:
    assert file_system_of(SHM, MOUNTS) == "tmpfs"
    assert file_system_of(SHM / "deeper" / "still", MOUNTS) == "tmpfs"
    assert file_system_of(Path("/dev"), MOUNTS) == "ext4"
    assert file_system_of(Path("/srv/with space/x"), MOUNTS) == "xfs"
    assert file_system_of(Path("/srv/with"), MOUNTS) == "ext4"


def test_no_mount_above_a_path_and_short_lines_are_nothing() -> None:
    assert file_system_of(Path("/tmp"), "broken line\n") is None


def test_a_writable_ram_directory_with_room_is_chosen() -> None:
    chosen = choose([Path("/tmp"), SHM], MOUNTS, lambda _: PLENTY, lambda _: True)
    assert chosen == SHM


@pytest.mark.parametrize(
    ("free", "writable"),
    [(PLENTY - 1, True), (PLENTY, False)],
    ids=["too-small", "read-only"],
)
def test_a_small_or_read_only_ram_directory_is_passed_over(free: int, writable: bool) -> None:
    assert choose([SHM], MOUNTS, lambda _: free, lambda _: writable) is None


def test_a_disk_directory_is_never_chosen() -> None:
    assert choose([Path("/tmp")], MOUNTS, lambda _: PLENTY, lambda _: True) is None


def test_the_command_prints_a_directory_or_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main() == 0
    printed = capsys.readouterr().out
    assert printed == "" or Path(printed.strip()).is_dir()
