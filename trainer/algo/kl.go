package algo

// KLEstimators are the names of Schulman's single-sample KL approximations
// (J. Schulman, "Approximating KL Divergence", 2020,
// http://joschu.net/blog/kl-approx.html; verl: core_algos.kl_penalty),
// computed by trainer/loss.TokenKL for the KL loss and the KL-in-reward
// penalty alike.
var KLEstimators = []string{"k1", "k2", "k3"}
