"""`tierscope tokenize` against Hugging Face's BertTokenizer (transformers, PyPI) on the
real bert-base-uncased vocabulary from ../shared/corpus/vocab: tokens and ids must be
identical over varied text — accents, CJK, Hangul, punctuation of every script,
control and zero-width characters, case oddities (İ, ß, final sigma), 100-character
words, and random draws from the vocabulary and from Unicode; and each token's offsets
against the tokenizers library's."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

REPO_ROOT = Path(__file__).resolve().parents[2]
VOCAB = REPO_ROOT.parent / "shared" / "corpus" / "vocab" / "bert-base-uncased-vocab.txt"

TEXTS = [
    "Hello, World! How are you doing today?",
    "Héllo wörld — naïve café, résumé, Ångström, façade, jalapeño.",
    "東京は日本の首都です。中文分词测试：你好，世界！",
    "한국어 텍스트도 토큰화합니다.",
    "ΣΊΣΥΦΟΣ and ὈΔΥΣΣΕΎΣ; Straße, İstanbul, ǅemal, ﬁnance, Ⅻ.",
    "tabs\tand\nnewlines\r\nand  multiple   spaces",
    "zero\u200bwidth\u200cjoiners\u200d and \u00adsoft hyphens and \ufeffBOM",
    "control\x00chars\x07here\x1b[0m and \ufffd replacement",
    "“Smart quotes” ‘single’ «guillemets» —dashes– … ellipsis ¿¡ ⁂ †‡",
    "emoji 😀👍🏽 🇫🇷 and symbols ∑∫√ ≤≥ ± © ® ™ € £ ¥ ₹",
    "URLs like https://example.com/path?query=1&x=2#frag and e-mail a.b@c.org",
    "numbers 3.14159, 1,000,000 and 42nd, 2nd-hand, 10x faster, 50%",
    "unaffable antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 100 + " " + "b" * 101 + " " + "é" * 101,
    "don't can't won't it's y'all o'clock rock'n'roll",
    "MiXeD CaSe WoRdS and ALLCAPS and lowercase",
    "fullwidth ＡＢＣ１２３！？ and halfwidth ｶﾀｶﾅ",
    "combining: e\u0301 a\u0308 n\u0303 o\u0302 and precomposed é ä ñ ô",
    "Arabic العربية and Hebrew עברית and Thai ภาษาไทย and Devanagari हिन्दी",
    "[CLS] [SEP] [MASK] brackets are ordinary text here",
    "",
    "   ",
]


def random_texts(vocab: list[str], n: int) -> list[str]:
    rng = random.Random(2026)
    out = []
    words = [w for w in vocab if not w.startswith("[")]
    for _ in range(n):
        parts = [rng.choice(words).replace("##", "") for _ in range(rng.randint(1, 12))]
        out.append(rng.choice([" ", "", "-", ". "]).join(parts))
    for _ in range(n):  # random code points from assigned-looking planes
        cps = [rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x24F), rng.randint(0x370, 0x3FF),
                           rng.randint(0x4E00, 0x4FFF), rng.randint(0x2000, 0x206F), rng.randint(0xAC00, 0xAD00)])
               for _ in range(rng.randint(1, 30))]
        out.append("".join(chr(c) for c in cps))
    return out


@pytest.fixture(scope="module")
def hf_tokenizer(tmp_path_factory):
    if not VOCAB.is_file():
        pytest.skip(f"no vocabulary at {VOCAB}")
    d = tmp_path_factory.mktemp("vocab")
    shutil.copy(VOCAB, d / "vocab.txt")
    return transformers.BertTokenizer.from_pretrained(str(d), do_lower_case=True)


def test_tokens_and_ids_match_hugging_face(tierscope_bin, hf_tokenizer):
    vocab = VOCAB.read_text(encoding="utf-8").splitlines()
    texts = TEXTS + random_texts(vocab, 150)
    run = subprocess.run([str(tierscope_bin), "tokenize", "--vocab", str(VOCAB)],
                         input="\n".join(json.dumps(t) for t in texts) + "\n",
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert run.returncode == 0, run.stderr
    ours = [json.loads(l) for l in run.stdout.splitlines()]
    # Empty strings are skipped by neither: one output line per input line.
    assert len(ours) == len(texts)
    mismatches = []
    for text, got in zip(texts, ours):
        want_tokens = hf_tokenizer.tokenize(text)
        want_ids = hf_tokenizer(text)["input_ids"]
        if got["tokens"] != want_tokens or got["ids"] != want_ids:
            mismatches.append((text, got["tokens"], want_tokens))
    assert mismatches == [], "\n".join(f"{t!r}\n  ours {o}\n  HF   {w}" for t, o, w in mismatches[:5])


def test_bad_stdin_lines_are_reported(tierscope_bin):
    if not VOCAB.is_file():
        pytest.skip(f"no vocabulary at {VOCAB}")
    run = subprocess.run([str(tierscope_bin), "tokenize", "--vocab", str(VOCAB)], input='"ok"\n{"not": "a string"}\n',
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "stdin line 2: expected a JSON string" in run.stderr


def test_offsets_match_hugging_face_fast_tokenizer(tierscope_bin):
    """Each token's code-point offsets against Hugging Face's tokenizers library's
    character offsets (TEI's /tokenize serves the same library's byte offsets), over the
    same texts; every text must tokenize alike, so none is passed over."""
    tokenizers = pytest.importorskip("tokenizers")
    if not VOCAB.is_file():
        pytest.skip(f"no vocabulary at {VOCAB}")
    fast = tokenizers.BertWordPieceTokenizer(str(VOCAB), lowercase=True)
    vocab = VOCAB.read_text(encoding="utf-8").splitlines()
    texts = [t for t in TEXTS + random_texts(vocab, 150) if t.strip()]
    run = subprocess.run([str(tierscope_bin), "tokenize", "--vocab", str(VOCAB)],
                         input="\n".join(json.dumps(t) for t in texts) + "\n",
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert run.returncode == 0, run.stderr
    ours = [json.loads(l) for l in run.stdout.splitlines()]
    compared, mismatches = 0, []
    for text, got in zip(texts, ours):
        enc = fast.encode(text, add_special_tokens=False)
        if enc.tokens != got["tokens"]:
            continue  # the Rust and Python tokenizers differ here; the tokens are tested above
        compared += 1
        want = [list(o) for o in enc.offsets]
        if got["offsets"] != want:
            mismatches.append((text, got["tokens"], got["offsets"], want))
    assert compared == len(texts), f"only {compared} of {len(texts)} texts tokenized alike"
    assert mismatches == [], "\n".join(f"{t!r}\n  tokens {k}\n  ours {o}\n  HF   {w}" for t, k, o, w in mismatches[:4])
