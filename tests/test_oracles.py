"""The real readers as oracles (fuzz/oracles.py): classification of their runs, the hostile
cases, and, when `bash fuzz/get-readers.sh` has fetched them, the profiles' predictions
against llvm-readobj 22/23 and objdump 2.47 on the hostile cases and a few corpus files."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from fuzz import oracle_cases as oc
from fuzz import oracles as O
from sfcheck.checker import Options, check_elf
from sfcheck.result import Severity


def test_classify_signal_and_assertion_are_crashes() -> None:
    assert O.classify("objdump", -6, "", "objdump: sframe.c:443: f: Assertion `0' failed.\n") \
        == O.Outcome(O.CRASH, "SIGABRT: objdump: sframe.c:443: f: Assertion `0' failed.")
    assert O.classify("llvm", -11, "", "").verdict == O.CRASH
    assert O.classify("llvm", None, "", "").detail == "timeout (hang)"
    # xmalloc's failure exits 1 with no signal: still a crash
    assert O.classify("objdump", 1, "", "objdump: out of memory allocating 4 bytes\n").verdict \
        == O.CRASH


def test_classify_refusals_and_acceptance() -> None:
    warn = "/x/bin/llvm-readobj-22: warning: 'f': invalid sframe section: unexpected end of data\n"
    got = O.classify("llvm", 0, "SFrame section '.sframe' {", warn)
    assert got.verdict == O.REJECT and got.detail.startswith("llvm-readobj-22: warning")
    err = "objdump: Error: SFrame decode failure: Corrupt SFrame.\n"
    assert O.classify("objdump", 0, "", err).verdict == O.REJECT
    dump = "Contents of the SFrame section .sframe:\n"
    assert O.classify("objdump", 0, dump, "").verdict == O.ACCEPT
    assert O.classify("objdump", 0, "no dump\n", "").verdict == O.REJECT
    assert O.classify("llvm", 0, "SFrame section", "").verdict == O.ACCEPT


def _hostile() -> dict[str, bytes]:
    return dict(oc.hostile_sections())


def test_hostile_sections_are_what_their_names_say() -> None:
    h = _hostile()
    for tag, fde_size in (("v2", 20), ("v3", 16)):
        n = struct.unpack_from("<I", h[f"{tag}-num-fdes-wraps"], 8)[0]
        assert n > 1 << 27 and (n * fde_size) % (1 << 32) <= fde_size  # the array size wraps
        assert h[f"{tag}-auxhdr-255"][7] == 255
        assert struct.unpack_from("<I", h[f"{tag}-fre-len-ffffffff"], 16)[0] == 0xFFFFFFFF
        clean = check_elf(oc.wrap(h[f"{tag}-unmodified"]))
        assert not [f for f in clean.findings if f.severity == Severity.ERROR
                    and f.rule != "header-flags-required"]
    assert h["v1-relabelled-v2"][2] == 2
    assert "v3-default-retyped-flex" in h and "v3-flex-retyped-default" in h


def test_zero_size_section_names_each_reader() -> None:
    elf = oc.wrap(b"")
    strict = [f for f in check_elf(elf).findings if f.rule == "header-too-short"]
    assert len(strict) == 1 and strict[0].severity == Severity.ERROR
    assert "llvm-readobj" in strict[0].message and "objdump" in strict[0].message
    llvm = [f for f in check_elf(elf, options=Options(profile="llvm-22")).findings
            if f.severity == Severity.ERROR]
    assert [f.rule for f in llvm] == ["header-too-short"]
    assert "LLVM 22 refuses" in llvm[0].message


def test_llvm_never_reads_pt_gnu_sframe() -> None:
    elf = oc.bad_segment(_hostile()["v2-unmodified"])
    strict = check_elf(elf).findings
    seg = [f for f in strict if f.location.section.startswith("PT_GNU_SFRAME")]
    assert any(f.severity == Severity.ERROR for f in seg)  # the segment's bytes are bad
    llvm = check_elf(elf, options=Options(profile="llvm-22")).findings
    assert not [f for f in llvm if f.severity == Severity.ERROR]
    assert {f.rule for f in llvm} >= {f.rule for f in seg}  # shown, as warnings


def test_overread_mismatch_is_listed_and_others_are_not() -> None:
    acc = O.Outcome(O.ACCEPT, "")
    over = O.Prediction(O.REJECT, ["layout-fre-bounds"])
    assert O.known_reason("hostile/x", "objdump-sid", acc, over) == O.OVERREAD_WHY
    assert O.known_reason("hostile/x", "llvm-readobj-22", acc, over) == ""
    other = O.Prediction(O.REJECT, ["header-bad-magic"])
    assert O.known_reason("hostile/x", "objdump-sid", acc, other) == ""
    # a refusal is no over-read: only the allocation's failure explains it
    rej = O.Outcome(O.REJECT, "Out of Memory.")
    assert O.known_reason("hostile/x", "objdump-sid", rej, over) == ""
    huge = O.Prediction(O.CRASH, ["layout-fde-array-bounds"], by_effect=True)
    assert O.known_reason("hostile/x", "objdump-sid", rej, huge) == O.OOM_WHY
    # the flex dumper's assertions are predicted (fre-reader-flex-*), no longer listed
    flex = O.Prediction(O.ACCEPT, [], by_effect=True, uncounted=["fre-word-count"])
    assert O.known_reason("hostile/x", "objdump-sid", O.Outcome(O.CRASH, ""), flex) == ""


def test_flex_dumper_aborts_are_predicted() -> None:
    h = _hostile()
    one = O.predict(oc.wrap(h["v3-flex-one-word"]), "libsframe-2.46")
    assert one.verdict == O.CRASH and "fre-reader-flex-one-word" in one.errors
    abi = O.predict(oc.wrap(h["v3-flex-abi-unknown"]), "libsframe-2.46")
    assert abi.verdict == O.CRASH and "fre-reader-flex-abi" in abi.errors
    # a DEFAULT FDE's one word is its CFA offset: the dumper prints it
    plain = O.predict(oc.wrap(h["v3-flex-retyped-default"]), "libsframe-2.46")
    assert "fre-reader-flex-one-word" not in plain.errors
    # the same sections under strict: the consumer rules stay silent
    strict = {f.rule for f in check_elf(oc.wrap(h["v3-flex-abi-unknown"])).findings}
    assert not strict & {"fre-reader-flex-one-word", "fre-reader-flex-abi"}


def _bounded_cases() -> list[tuple[str, bytes]]:
    corpus = [c for c in oc.corpus_files() if c[0] in (
        "corpus/v2/libcorpus.so", "corpus/v3/libcorpus.so", "corpus/v1/libcorpus.so",
        "corpus/llvm/exe_pie", "corpus/bad/ld240_v2obj_raw.so")]
    return corpus + list(oc.hostile_cases())


@pytest.mark.parametrize("reader", [r.name for r in O.READERS])
def test_profiles_predict_the_real_readers(reader: str, tmp_path: Path) -> None:
    found = O.available([reader])
    if not found:
        pytest.skip(f"{reader} not fetched into {O.readers_dir()} (bash fuzz/get-readers.sh)")
    if found[0].kind == "objdump" and not O.effects_available():
        pytest.skip("objdump's prediction needs per-finding effects (sfcheck.effects): "
                    "lookup-only findings are errors under libsframe-2.46 without them")
    rows = list(O.compare(_bounded_cases(), found, tmp_path))
    assert len(rows) > 60
    wrong = [f"{r.case}: {r.actual} vs {r.predicted}" for r in rows if not r.ok and not r.known]
    assert not wrong, "\n".join(wrong)
    # the hostile set does reach the reader's refusals and acceptances
    assert {r.actual.verdict for r in rows} >= {O.ACCEPT, O.REJECT}


def test_libsframe_240_reads_v1_only() -> None:
    h = _hostile()
    v1, v2 = oc.wrap(h["v1-unmodified"]), oc.wrap(h["v2-unmodified"])
    assert O.predict(v1, "libsframe-2.40").verdict == O.ACCEPT
    assert O.predict(v2, "libsframe-2.40").errors == ["header-version-unsupported"]
    assert O.predict(v1, "libsframe-2.46").verdict != O.ACCEPT  # 2.46 reads v2 and v3


def test_llvm_refuses_a_section_in_the_other_byte_order() -> None:
    from dataclasses import replace

    from sfcheck.format.decode import decode
    from sfcheck.format.encode import encode
    sec = decode(_hostile()["v2-unmodified"])
    big = encode(replace(sec, header=replace(sec.header, big_endian=True)))
    elf = oc.wrap(big)
    assert O.predict(elf, "llvm-22").errors == ["header-byte-order-elf"]
    assert "header-byte-order-elf" not in O.predict(elf, "libsframe-2.46").errors
    assert O.predict(oc.wrap(_hostile()["v2-unmodified"]), "llvm-22").verdict == O.ACCEPT


def test_libsframe_240_aborts_on_an_fre_at_the_function_end() -> None:
    path = oc.CORPUS / "defects" / "cfi_at_end-v1.o"
    assert "defect-fre-start-at-size" in O.predict(path.read_bytes(), "libsframe-2.40").errors
    assert O.predict(path.read_bytes(), "libsframe-2.46").errors == [
        "header-version-unsupported"]


def test_fuzz_signature_keys() -> None:
    from fuzz.oracle_fuzz import signature
    crash = O.Outcome(O.CRASH, "SIGABRT: sframe.c:1877: f: Assertion `a <= b' failed.")
    row = O.Row("fuzz", "objdump-sid", crash, O.Prediction(O.ACCEPT, []))
    kind, key = signature(row)  # type: ignore[misc]
    assert kind == "crash, predicted accept" and "sframe.c:N" in key
    row = O.Row("fuzz", "objdump-sid", crash, O.Prediction(O.REJECT, ["layout-fre-bounds"]))
    assert signature(row)[0] == "crash"  # type: ignore[index]
    agree = O.Row("fuzz", "llvm-readobj-22", O.Outcome(O.ACCEPT, ""), O.Prediction(O.ACCEPT))
    assert signature(agree) is None
    differ = O.Row("fuzz", "llvm-readobj-22", O.Outcome(O.ACCEPT, ""),
                   O.Prediction(O.REJECT, ["header-bad-magic"]))
    assert signature(differ) == ("verdict", "actual accept, predicted reject: header-bad-magic")


def test_short_campaign_writes_a_report(tmp_path: Path) -> None:
    from fuzz import oracle_fuzz
    found = O.available(["llvm-readobj-22"])
    if not found:
        pytest.skip(f"llvm-readobj-22 not fetched into {O.readers_dir()}")
    finds, execs, elapsed = oracle_fuzz.campaign(found[0], 2.0, seed=3)
    assert execs > 0 and elapsed >= 2.0
    md = oracle_fuzz.report(found[0], finds, execs, elapsed, 3, tmp_path, "test")
    text = md.read_text()
    assert f"{execs} executions" in text
    repro = tmp_path / "fuzz-llvm-readobj-22-test-repro"
    assert len(list(repro.iterdir()) if repro.exists() else []) == len(finds)


def test_libsframe_refuses_a_foreign_order_section_its_walk_fails() -> None:
    from dataclasses import replace

    from sfcheck.format.decode import decode
    from sfcheck.format.encode import encode
    sec = decode(_hostile()["v3-unmodified"])
    big = encode(replace(sec, header=replace(sec.header, big_endian=True)))
    assert "header-foreign-order-refused" not in O.predict(oc.wrap(big), "libsframe-2.46").errors
    padded = oc.wrap(big + b"\x01")  # a nonzero byte after the FREs: the walk refuses
    assert "header-foreign-order-refused" in O.predict(padded, "libsframe-2.46").errors
    native = oc.wrap(_hostile()["v3-unmodified"] + b"\x01")
    assert "header-foreign-order-refused" not in O.predict(native, "libsframe-2.46").errors
