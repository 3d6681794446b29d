"""Long context: every document a reader may read, pasted whole into one prompt, instead of
retrieving a few chunks (RAG), and what fine-tuning cannot do in their place.

The seed's rule of thumb: "long context for small sets, RAG for large or changing
knowledge, fine-tuning for behaviour rather than facts"; "a knowledge base under about
200,000 tokens can often go straight into the prompt". One idea per module:

- `raglab.longcontext.whole_corpus`: the long prompt for a principal (access and versions
  first, exactly the documents `raglab.ask` could retrieve from), counted in tokens and
  refused over a budget; answered like `ask` (the same `Answer`, citations verified);
- `raglab.longcontext.cost`: tokens times a price per million, input and output apart;
- `raglab.longcontext.position`: one document moved through the long prompt ("lost in the
  middle");
- `raglab.longcontext.leaks`: what a prompt shows a reader that they may not read;
- `raglab.longcontext.growth`: a bigger corpus, grown deterministically from a small one;
- `raglab.longcontext.finetuned`: a tiny learned question -> answer model, to show what
  fine-tuning cannot do here (per-user access, citations, fresh facts).

Measured on the labelled questions by `raglab.evaluation.longcontext`.
"""
