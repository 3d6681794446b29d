"""An agent that searches again: retrieval as tools, a planner that decides the next call.

One search answers most questions. A multi-step one ("the warranty of the part the
troubleshooting guide says to install") needs a second search that depends on what the
first found (the part's code). The agent runs a loop:

    plan ─► call a tool (search, read, ...) ─► enough evidence for every part? ─► no: refine, again
                                                                              └► yes: answer

- `raglab.agent.tools`: the tools, bound to the asker's principal, within a step and token budget;
- `raglab.agent.sufficiency`: the check after each step, "enough evidence for every part?";
- `raglab.agent.planner`: the offline planner (decomposition rules, refined queries);
- `raglab.agent.model_planner`: the same loop driven by a language model through a JSON protocol;
- `raglab.agent.loop`: the loop, its trace and its stop reason, and the answer through the
  ordinary answerer over everything gathered.
"""
