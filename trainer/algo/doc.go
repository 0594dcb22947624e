// Package algo turns rewarded multi-turn trajectories into per-token
// advantages and returns, and holds the stabilisers and diagnostics around
// them. Every formula sits next to its source; the references are:
//
//   - GAE: Schulman et al. 2016, "High-Dimensional Continuous Control Using
//     Generalized Advantage Estimation", arXiv:1506.02438, eq. (16).
//     verl: trainer/ppo/core_algos.py compute_gae_advantage_return.
//   - GRPO: Shao et al. 2024, "DeepSeekMath", arXiv:2402.03300, Sec. 4.1.2
//     (outcome supervision). Dr. GRPO (no std division): Liu et al. 2025,
//     "Understanding R1-Zero-Like Training", arXiv:2503.20783.
//     verl: compute_grpo_outcome_advantage.
//   - RLOO: Ahmadian et al. 2024, "Back to Basics: Revisiting REINFORCE Style
//     Optimization for Learning from Human Feedback in LLMs",
//     arXiv:2402.14740; the leave-one-out baseline of Kool et al. 2019,
//     "Buy 4 REINFORCE Samples, Get a Baseline for Free!".
//     verl: compute_rloo_outcome_advantage.
//   - REINFORCE++ and REINFORCE++-baseline: Hu 2025, arXiv:2501.03262.
//     verl: compute_reinforce_plus_plus_outcome_advantage and
//     compute_reinforce_plus_plus_baseline_outcome_advantage; OpenRLHF:
//     openrlhf/trainer/ppo_utils/experience_maker.py get_cumulative_returns.
//   - GiGPO: Feng et al. 2025, "Group-in-Group Policy Optimization for LLM
//     Agent Training", arXiv:2505.10978. verl-agent:
//     gigpo/core_gigpo.py compute_gigpo_outcome_advantage.
//   - Turn-level leave-one-out advantages (turn_rloo): the RLOO baseline
//     per turn index; why it stays unbiased when episodes differ in length
//     is in turn_rloo.go (cf. verl's RFC #7244 on per-turn normalisation).
//   - Variance filter and echo trap: Wang et al. 2025, "RAGEN: Understanding
//     Self-Evolution in LLM Agents via Multi-Turn Reinforcement Learning"
//     (StarPO-S), arXiv:2504.20073; RAGEN: ragen/trainer/rollout_filter.py.
//   - KL estimators k1, k2, k3: J. Schulman, "Approximating KL Divergence",
//     2020, http://joschu.net/blog/kl-approx.html. verl: kl_penalty.
//   - The advantage mask over agent trajectories: Cheng et al. 2025,
//     "Agent-R1: Training Powerful LLM Agents with End-to-End Reinforcement
//     Learning", arXiv:2511.14460.
//
// The code here is pure Go over trajectory.Trajectory slices and builds and
// tests without libtorch: the losses' settings (LossConfig) and
// normalisers (Norm) are here, the losses themselves, which need tensors,
// in trainer/loss.
package algo
