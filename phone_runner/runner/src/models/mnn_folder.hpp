// The MNN engine's request checks, compiled in every build so the reference build tests them: the
// pushed model folders (an MNN LLM folder, or a Whisper export of workbench.models.mnn.export) and
// what each window must carry for them (PROTOCOL.md windows[i]: prompt, eos_id, features).
#pragma once

#include <cstdint>
#include <string>

#include "../protocol.hpp"

namespace as2d {

struct MnnFolder {
    std::string dir;        // resolved against the request's folder
    bool whisper = false;   // as2d_mnn.json + encoder.mnn + decoder.mnn (encoder-decoder target)
    int64_t vocab_size = 0; // Whisper: config.json vocab_size
    int64_t mel_bins = 0;   // Whisper: the encoder's feature rows (config.json num_mel_bins)
    int64_t frames = 0;     // Whisper: feature columns, 2 * max_source_positions
};

// The folder ``models.<role>.dir`` names; a missing one is ``missing_file`` naming it.
MnnFolder mnn_folder(const Request& r, const std::string& role);

// Every check of an mnn-engine request that needs no MNN: roles, backends, folders, each window's
// prompt / features (header and shape), and one vocabulary for target and proposer (drafter or producer).
void check_mnn_request(const Request& r);

}  // namespace as2d
