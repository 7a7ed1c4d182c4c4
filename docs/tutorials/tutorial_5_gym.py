"""
Optimising a program with the LLVM environment
==============================================

:mod:`programl.gym` is a `gymnasium <https://gymnasium.farama.org>`_ environment shaped like CompilerGym's
``llvm-v0``: each action runs one LLVM 22 pass on the program, the observation can be the program's ProGraML graph,
and the reward counts the instructions a pass removed, scaled so that LLVM's own ``-Oz`` scores 1.0 over an episode.
This tutorial runs an episode by hand, a random agent, and the learned policy that picks a pass pipeline from the
graph in one shot; then plots the reward against the steps. The :doc:`/gym` page has the whole story.
"""

import tempfile
from pathlib import Path

import gymnasium
import numpy as np

import programl.gym  # noqa: F401 - registers "programl/llvm-v0"

# The bundled example: a small C program with loops, a switch and calls.
source = """
static int square(int x) { return x * x; }
int sum_of_squares(const int *values, int n) {
  int total = 0;
  for (int i = 0; i < n; ++i) total += square(values[i]);
  return total;
}
int classify(int x) {
  switch (x % 4) { case 0: return 1; case 1: return 7; case 2: return 3; default: return 0; }
}
"""
path = Path(tempfile.mkdtemp()) / "example.c"
path.write_text(source)

env = gymnasium.make(
    "programl/llvm-v0",
    benchmark=str(path),
    observation_space="Autophase",
    reward_space="IrInstructionCountOz",
)
observation, info = env.reset(seed=0)
print(info["benchmark"].rsplit("/", 1)[-1], "- Autophase:", observation.shape, "features")
print("instructions at -O0:", env.unwrapped.observation["IrInstructionCount"])

# %%
# An episode by hand: actions are passes, by index. The reward of each step is the fall in instruction count
# divided by the fall ``-Oz`` achieves.

names = env.unwrapped.action_space.names
by_hand = []
for name in ("mem2reg", "instcombine", "simplifycfg", "inline"):
    observation, reward, terminated, truncated, info = env.step(names.index(name))
    by_hand.append(env.unwrapped.episode_reward)
    count = env.unwrapped.observation["IrInstructionCount"]
    print(f"{name:<12} reward {reward:+.3f}  instructions {count}")
print("episode reward:", round(env.unwrapped.episode_reward, 3))
print(env.unwrapped.commandline())

# %%
# The graph is one observation among others, computed when asked for and cached for this state.

graph = env.unwrapped.observation["Programl"]
print(graph)

# %%
# A random agent: 3 episodes of 20 random passes, keeping each step's reward for the plot below.

env.unwrapped.action_space.seed(0)
random_rewards = []
for episode in range(3):
    env.reset()
    rewards = []
    for _ in range(20):
        _, reward, terminated, _, _ = env.step(env.unwrapped.action_space.sample())
        rewards.append(reward)
        if terminated:
            break
    random_rewards.append(np.cumsum(rewards))
    print(f"random episode {episode}: return {sum(rewards):.3f}")

# %%
# The learned policy (:mod:`programl.gym.policy`): a GGNN reads the program's ProGraML graph and its Autophase
# features, and picks one of a few pass pipelines in one shot. It ships with programl; without it (or without the
# ``ml`` extra), ``-Oz``.

from programl.gym.agents import baseline  # noqa: E402
from programl.gym.policy import PolicyError, guided_search, load_policy  # noqa: E402

unwrapped = env.unwrapped
oz = baseline(unwrapped, "Oz")
try:
    policy = load_policy()
except (PolicyError, ModuleNotFoundError) as error:
    policy = None
    print("no learned policy here:", error)
if policy is not None:
    unwrapped.reset()
    scores = policy.scores(unwrapped)
    for index in policy.rank(unwrapped)[:3]:
        print(f"{scores[index]:.2f}  {policy.pipelines[index]}")
    one_shot = policy.optimize(unwrapped)
    guided = guided_search(unwrapped, policy, max_seconds=5)
    for result in (oz, one_shot, guided):
        print(f"{result.agent:<7} {result.cost:>4} instructions, reward {result.reward:.3f}: {result.pipeline}")

# %%
# Reward against steps: the running return of the episode by hand and of the random episodes, against ``-Oz`` (1.0
# by definition); drawn with matplotlib (the site shows the figure below), and as text (a bar per step and episode).

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

curves = {"by hand": by_hand, **{f"random {i}": list(returns) for i, returns in enumerate(random_rewards)}}
figure, axes = plt.subplots(figsize=(6, 3.2))
for label, returns in curves.items():
    axes.plot(range(1, len(returns) + 1), returns, marker="o", label=label)
axes.axhline(oz.reward, color="black", linestyle="--", label="-Oz")
axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
axes.set_xlabel("step")
axes.set_ylabel("episode reward (IrInstructionCountOz)")
axes.legend(fontsize=8)
figure.tight_layout()

top = max(oz.reward, *(max(returns) for returns in curves.values()))
for label, returns in curves.items():
    print(label)
    for step, value in enumerate(returns, start=1):
        if step <= 4 or step == len(returns):
            print(f"  step {step:>2} {value:6.3f} {'#' * max(0, round(30 * value / top))}")
print(f"-Oz        {oz.reward:6.3f} {'#' * round(30 * oz.reward / top)}")
env.close()
