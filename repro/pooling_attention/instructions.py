"""Tang & Yang's evaluation instructions (E5-Mistral style task definitions), for the book's 19 offline tasks.

The official evaluation (``run_mteb.py``, ``run_mteb_retrieval.py`` and the instruction table in
``eval_instruction.py`` of yixuantt/PoolingAndAttn) glues the task's instruction before the text, with no separator
(``instruction + text``, then EOS): every text of STS, classification, clustering and pair-classification tasks,
and the queries (not the documents) of retrieval tasks. The book evaluates Paper 1's trained models both without
instructions (prompt ``none``: text + EOS, as in training) and with them (prompt ``instruction``). One deviation,
stated on the page: the official code tokenizes ``instruction + text`` in one call, ours tokenizes the two pieces
separately (a boundary merge can differ).

The strings are the official table's for the tasks it lists. Two of our tasks are not in it under their names:
NFCorpusPreprocessed takes NFCorpus's instruction; AmazonCounterfactualClassification takes E5-Mistral's
published instruction for that task.
"""

from __future__ import annotations

STS = "Retrieve semantically similar text."

INSTRUCTIONS: dict[str, str] = {
    **{name: STS for name in ("BIOSSES", "SICK-R", "STS12", "STS13", "STS14", "STS15", "STS16", "STS17",
                              "STSBenchmark")},
    "Banking77Classification": "Given a online banking query, find the corresponding intents.",
    "EmotionClassification": "Classify the emotion expressed in the given Twitter message into one of the six "
                             "emotions:anger, fear, joy, love, sadness, and surprise.",
    "ImdbClassification": "Classify the sentiment expressed in the given movie review text from the IMDB dataset.",
    "TweetSentimentExtractionClassification": "Classify the sentiment of a given tweet as either positive, "
                                              "negative, or neutral",
    "AmazonCounterfactualClassification": "Classify a given Amazon customer review text as either "
                                          "counterfactual or not-counterfactual",
    "TwentyNewsgroupsClustering": "Identify the topic or theme of the given news articles",
    "TwitterURLCorpus": "Retrieve tweets that are semantically similar to the given tweet",
    "ArguAna": "Given a claim, find documents that refute the claim.",
    "SciFact": "Given a scientific claim, retrieve documents that support or refute the claim.",
    "NFCorpusPreprocessed": "Given a question, retrieve relevant documents that best answer the question.",
}

TANG_YANG = ("tang-yang", INSTRUCTIONS)  # the named variant the converged runs are scored with (repro train --instructions)
