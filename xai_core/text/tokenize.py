"""One tokenizer interface over HuggingFace ``tokenizers``, ``transformers`` tokenizers and
plain functions, and the padded batch of ids every text method works on.

:class:`TextTokenizer` wraps

- a ``tokenizers.Tokenizer`` (its ``encode_batch``; word ids and offsets from its encodings;
  padding it adds itself is removed, as the batch is padded here),
- a ``transformers`` tokenizer (called with ``add_special_tokens=True``; word ids from a
  fast tokenizer's ``word_ids``, else from the ``##`` prefix of WordPiece pieces),
- a callable ``str -> list[int]`` (tokens are the ids written out unless ``id_to_token``
  names them; every token is its own word).

:meth:`TextTokenizer.encode` pads every text on the right with the pad id to one length
and refuses empty texts and texts longer than that length, naming the text and both
lengths, unless ``truncation=True`` (then the last tokens are dropped; a text that ends
with a special token, ``[SEP]``, keeps it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import ValidationError, XaiWarning

__all__ = ["Encoded", "TextTokenizer", "check_texts"]


def check_texts(texts: Any, name: str = "texts") -> list[str]:
    """``texts`` as a list of non-empty strings (a single string is one text)."""
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Sequence) or not len(texts):
        raise ValidationError(f"{name} must be a non-empty list of strings; got {texts!r:.80}.")
    out = []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValidationError(f"{name}[{i}] must be a string; got {type(t).__name__}.")
        if not t.strip():
            raise ValidationError(f"{name}[{i}] is empty; every text needs at least one word.")
        out.append(t)
    return out


@dataclass(frozen=True)
class Encoded:
    """Texts as one padded batch of token ids.

    Attributes
    ----------
    ids : ndarray of int64 of shape (n_texts, seq_len)
        Padded on the right with ``pad_id``.
    mask : ndarray of bool of shape (n_texts, seq_len)
        True at the texts' own tokens, False at padding.
    tokens : ndarray of object of shape (n_texts, seq_len)
        Token strings; ``""`` at padding.
    words : ndarray of int64 of shape (n_texts, seq_len)
        Word index of each token within its text (pieces of one word share it; a special
        token is a word of its own); -1 at padding.
    word_text : list of list of str
        Per text, the text of each word (from the tokenizer's offsets when it has them,
        else its pieces joined).
    pad_id : int
    texts : tuple of str
    special : ndarray of bool of shape (n_texts, seq_len), optional
        True at the tokenizer's special tokens (``[CLS]``, ``[SEP]``); None when the
        tokenizer does not tell (a callable).
    spans : ndarray of int64 of shape (n_texts, seq_len, 2), optional
        Character offsets ``[start, end)`` of each token in its text (``(0, 0)`` at special
        tokens and padding); None when the tokenizer gives no offsets (a callable, a slow
        ``transformers`` tokenizer).
    """

    ids: np.ndarray
    mask: np.ndarray
    tokens: np.ndarray
    words: np.ndarray
    word_text: list[list[str]]
    pad_id: int
    texts: tuple[str, ...]
    special: np.ndarray | None = None
    spans: np.ndarray | None = None


def _piece_words(tokens: Sequence[str], special: Sequence[bool]) -> list[int]:
    """Word index per token from WordPiece's ``##`` continuation prefix."""
    words, w = [], -1
    for tok, sp in zip(tokens, special):
        if sp or not tok.startswith("##") or w < 0:
            w += 1
        words.append(w)
    return words


def _join(pieces: Sequence[str]) -> str:
    return "".join(p[2:] if i and p.startswith("##") else p for i, p in enumerate(pieces))


class TextTokenizer:
    """A tokenizer of any of the three kinds, behind one ``encode``.

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer, transformers tokenizer or callable
        A callable takes one string and returns a list of int ids.
    pad_id : int, optional
        The id padding is filled with. Default: the tokenizer's pad token (``[PAD]``,
        ``<pad>``), or 0 for a callable.
    id_to_token : callable, optional
        Token string of an id, for a callable tokenizer (default: the id written out).
    """

    def __init__(
        self,
        tokenizer: Any,
        pad_id: int | None = None,
        id_to_token: Callable[[int], str] | None = None,
    ) -> None:
        if isinstance(tokenizer, TextTokenizer):
            tokenizer = tokenizer.tokenizer
        module = type(tokenizer).__module__
        if module.startswith("tokenizers"):
            self.kind = "tokenizers"
        elif hasattr(tokenizer, "convert_ids_to_tokens") and callable(tokenizer):
            self.kind = "transformers"
        elif callable(tokenizer):
            self.kind = "callable"
        else:
            raise ValidationError(
                "tokenizer must be a tokenizers.Tokenizer, a transformers tokenizer or a "
                f"callable str -> list[int]; got {type(tokenizer).__name__}."
            )
        self.tokenizer = tokenizer
        self.id_to_token = id_to_token
        self.pad_id = self._pad_id() if pad_id is None else int(pad_id)

    def _pad_id(self) -> int:
        tok = self.tokenizer
        if self.kind == "transformers" and tok.pad_token_id is not None:
            return int(tok.pad_token_id)
        if self.kind == "tokenizers":
            padding = tok.padding
            if padding:
                return int(padding["pad_id"])
            for name in ("[PAD]", "<pad>", "<PAD>"):
                found = tok.token_to_id(name)
                if found is not None:
                    return int(found)
        if self.kind == "callable":
            return 0
        raise ValidationError(
            "the tokenizer has no pad token; pass pad_id= (the id padding is filled with)."
        )

    @property
    def vocab_size(self) -> int | None:
        """How many ids the tokenizer can give (added tokens included); None for a callable."""
        if self.kind == "tokenizers":
            return int(self.tokenizer.get_vocab_size(with_added_tokens=True))
        if self.kind == "transformers":
            return int(len(self.tokenizer))
        return None

    def check_fits(self, embedding: Any) -> None:
        """Warn when the tokenizer can give ids ``embedding`` (an
        :class:`~xai_core.nn.Embedding`) has no row for: it may not be the model's. (Tokens
        added to a tokenizer without resizing the model's table do this too; an id that
        actually arrives out of range is refused by the embedding's own check.)"""
        size = self.vocab_size
        if size is not None and size > embedding.vocab_size:
            warnings.warn(
                f"tokenizer has a vocabulary of {size} tokens; the model's Embedding "
                f"{embedding.name!r} has {embedding.vocab_size} rows, so some of its ids have "
                "no embedding: check that it is the tokenizer this model was trained with.",
                XaiWarning,
                stacklevel=3,
            )

    def token_id(self, token: str | int) -> int:
        """The id of ``token`` (an id is returned as it is)."""
        if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
            return int(token)
        tok = self.tokenizer
        found = None
        if self.kind == "tokenizers":
            found = tok.token_to_id(token)
        elif self.kind == "transformers":
            found = tok.convert_tokens_to_ids(token)
            if found == tok.unk_token_id and token != tok.unk_token:
                found = None
        if found is None:
            raise ValidationError(f"token {token!r} is not in the tokenizer's vocabulary.")
        return int(found)

    def _encode(self, texts: list[str]) -> list[tuple[Any, ...]]:
        """Per text: ids, tokens, word index per token, text of each word, special flag per
        token (or None), character span per token (or None)."""
        out = []
        if self.kind == "tokenizers":
            for text, enc in zip(texts, self.tokenizer.encode_batch(texts)):
                keep = [i for i, m in enumerate(enc.attention_mask) if m]
                ids = [enc.ids[i] for i in keep]
                tokens = [enc.tokens[i] for i in keep]
                wid = [enc.word_ids[i] for i in keep]
                spans = [enc.offsets[i] for i in keep]
                special = [w is None for w in wid]
                out.append(
                    (ids, tokens, *_words_from_ids(text, tokens, wid, spans), special, spans)
                )
        elif self.kind == "transformers":
            tok = self.tokenizer
            fast = bool(getattr(tok, "is_fast", False))
            enc = tok(texts, add_special_tokens=True, return_offsets_mapping=fast)
            special = set(tok.all_special_ids)
            for i, (text, ids) in enumerate(zip(texts, enc["input_ids"])):
                ids = [int(t) for t in ids]
                tokens = [str(t) for t in tok.convert_ids_to_tokens(ids)]
                if fast:
                    wid = enc.word_ids(i)
                    spans = enc["offset_mapping"][i]
                    sp = [w is None for w in wid]
                    out.append((ids, tokens, *_words_from_ids(text, tokens, wid, spans), sp, spans))
                else:
                    sp = [t in special for t in ids]
                    words = _piece_words(tokens, sp)
                    out.append((ids, tokens, words, _texts_of(tokens, words), sp, None))
        else:
            name = self.id_to_token or str
            for text in texts:
                ids = self.tokenizer(text)
                arr = np.asarray(ids)
                if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
                    raise ValidationError(
                        f"the tokenizer must return a list of int ids; for {text[:40]!r} it "
                        f"returned {type(ids).__name__} of dtype {arr.dtype}."
                    )
                ids = [int(t) for t in arr]
                tokens = [str(name(t)) for t in ids]
                out.append((ids, tokens, list(range(len(ids))), list(tokens), None, None))
        return out

    def encode(
        self, texts: Any, max_length: int | None = None, *, truncation: bool = False
    ) -> Encoded:
        """Tokenize ``texts`` into one batch padded to ``max_length`` (default: the longest).

        Parameters
        ----------
        texts : str or sequence of str
            Non-empty texts.
        max_length : int, optional
            Length of every row (the model's sequence length).
        truncation : bool, default=False
            Cut texts longer than ``max_length`` (keeping a final special token) instead of
            refusing them.

        Returns
        -------
        Encoded

        Raises
        ------
        ValidationError
            An empty text, a text with no tokens, or (without ``truncation``) a text of more
            than ``max_length`` tokens, naming the text and both lengths.
        """
        texts = check_texts(texts)
        parts = self._encode(texts)
        lengths = [len(p[0]) for p in parts]
        for i, n in enumerate(lengths):
            if n == 0:
                raise ValidationError(f"texts[{i}] {texts[i][:40]!r} gives no tokens.")
        L = max(lengths) if max_length is None else int(max_length)
        n = len(texts)
        ids = np.full((n, L), self.pad_id, dtype=np.int64)
        mask = np.zeros((n, L), dtype=bool)
        tokens = np.full((n, L), "", dtype=object)
        words = np.full((n, L), -1, dtype=np.int64)
        word_text = []
        has_special = all(p[4] is not None for p in parts)
        has_spans = all(p[5] is not None for p in parts)
        special = np.zeros((n, L), dtype=bool) if has_special else None
        spans = np.zeros((n, L, 2), dtype=np.int64) if has_spans else None
        for i, (row_ids, row_tokens, row_words, row_text, row_sp, row_spans) in enumerate(parts):
            if len(row_ids) > L:
                if not truncation:
                    raise ValidationError(
                        f"texts[{i}] {texts[i][:40]!r} has {len(row_ids)} tokens; the model "
                        f"takes at most {L}. Shorten it, or pass truncation=True to keep its "
                        f"first {L} tokens."
                    )
                keep = list(range(L))
                if row_words[-1] is not None and row_tokens[-1] in _special(self):
                    keep[-1] = len(row_ids) - 1  # the final [SEP] stays
                row_ids = [row_ids[k] for k in keep]
                row_tokens = [row_tokens[k] for k in keep]
                row_words = [row_words[k] for k in keep]
                kept = list(dict.fromkeys(row_words))  # the words left, in order
                row_text = [row_text[w] for w in kept]
                renumber = {w: j for j, w in enumerate(kept)}
                row_words = [renumber[w] for w in row_words]  # 0, 1, ... without gaps
                row_sp = None if row_sp is None else [row_sp[k] for k in keep]
                row_spans = None if row_spans is None else [row_spans[k] for k in keep]
            m = len(row_ids)
            if special is not None:
                special[i, :m] = row_sp
            if spans is not None:
                spans[i, :m] = np.asarray(row_spans, dtype=np.int64).reshape(m, 2)
                if special is not None:
                    spans[i, :m][special[i, :m]] = 0
            ids[i, :m] = row_ids
            mask[i, :m] = True
            tokens[i, :m] = row_tokens
            words[i, :m] = row_words
            word_text.append(list(row_text))
        return Encoded(
            ids, mask, tokens, words, word_text, self.pad_id, tuple(texts), special, spans
        )


def _special(t: TextTokenizer) -> set[str]:
    tok = t.tokenizer
    if t.kind == "transformers":
        return set(tok.all_special_tokens)
    if t.kind == "tokenizers":
        return {"[SEP]", "</s>", "[CLS]", "<s>"}
    return set()


def _texts_of(tokens: Sequence[str], words: Sequence[int]) -> list[str]:
    out: list[list[str]] = []
    for tok, w in zip(tokens, words):
        if w >= len(out):
            out.append([])
        out[w].append(tok)
    return [_join(p) for p in out]


def _words_from_ids(
    text: str, tokens: Sequence[str], word_ids: Sequence[int | None], spans: Sequence[Any]
) -> tuple[list[int], list[str]]:
    """Word index per token (0, 1, ... in order, a special token a word of its own) and the
    text of each word, from a tokenizer's word ids and character offsets."""
    words, texts, last = [], [], object()
    for tok, wid, span in zip(tokens, word_ids, spans):
        if wid is None or wid != last:
            texts.append([])
            texts[-1].append((tok, span, wid is None))
        else:
            texts[-1].append((tok, span, False))
        words.append(len(texts) - 1)
        last = wid if wid is not None else object()
    out = []
    for pieces in texts:
        if pieces[0][2]:  # a special token
            out.append(pieces[0][0])
            continue
        start, end = int(pieces[0][1][0]), int(pieces[-1][1][1])
        out.append(text[start:end] if end > start else _join([p[0] for p in pieces]))
    return words, out
