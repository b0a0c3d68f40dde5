"""Text inputs: tokenizers behind one interface, and gradient attributions per token.

``xai.explain(model, texts, tokenizer=tok, method="ig")`` tokenizes the texts
(:class:`TextTokenizer`), runs the model on the ids and attributes at its
:class:`~xai_core.nn.Embedding` output (:mod:`xai_core.text.attribute`); the explanation
carries the tokens (``meta["tokens"]``) and renders as highlighted text
(:mod:`xai_core.text.render`). ``method="lime"`` and ``"shap"`` change the texts instead
and call the model on them (:mod:`xai_core.text.perturb`; a model of strings is any
callable ``list[str] -> array``). See ``docs/text.md``.
"""

from __future__ import annotations

from xai_core.text.explain import encode_ids, explain_text, is_texts, merge_words, reads_ids
from xai_core.text.render import text_html, text_png
from xai_core.text.tokenize import Encoded, TextTokenizer, check_texts

__all__ = [
    "Encoded",
    "TextTokenizer",
    "check_texts",
    "encode_ids",
    "explain_text",
    "is_texts",
    "merge_words",
    "reads_ids",
    "text_html",
    "text_png",
]
